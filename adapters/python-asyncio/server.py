"""A standard-library-only asyncio HTTP/1.1 keep-alive server for `icount serve`.

    python3 server.py --port P

Answers GET /plaintext and GET /json with the same bytes as the c-epoll target (no
Date header). A Protocol (not streams) keeps per-request work small; pipelined
requests in one read are answered in order.
"""

from __future__ import annotations

import argparse
import asyncio


def _response(status: str, content_type: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\n"
        "Server: python-asyncio\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: keep-alive\r\n"
        "Keep-Alive: timeout=600\r\n"
        "\r\n"
    )
    return head.encode("ascii") + body


ROUTES = {
    b"GET /plaintext": _response("200 OK", "text/plain", b"Hello, World!"),
    b"GET /json": _response("200 OK", "application/json", b'{"message":"Hello, World!"}'),
}
NOT_FOUND = _response("404 Not Found", "text/plain", b"Not Found")
MAX_HEAD = 16384


class HttpProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        buf = self.buf + data if self.buf else data
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            line_end = buf.find(b"\r\n")
            method, _, rest = buf[:line_end].partition(b" ")
            target = rest.rpartition(b" ")[0]
            self.transport.write(ROUTES.get(method + b" " + target, NOT_FOUND))
            buf = buf[end + 4 :]
        if len(buf) > MAX_HEAD:
            self.transport.close()
            buf = b""
        self.buf = buf


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(HttpProtocol, args.host, args.port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
