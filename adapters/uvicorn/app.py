"""A raw ASGI app (no framework) answering the bundled targets' two paths."""

PLAIN = b"Hello, World!"
JSON = b'{"message":"Hello, World!"}'


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/plaintext":
        body, ctype = PLAIN, b"text/plain"
    elif path == "/json":
        body, ctype = JSON, b"application/json"
    else:
        body, ctype = b"Not Found", b"text/plain"
    await send(
        {
            "type": "http.response.start",
            "status": 200 if ctype != b"text/plain" or body == PLAIN else 404,
            "headers": [(b"content-type", ctype), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
