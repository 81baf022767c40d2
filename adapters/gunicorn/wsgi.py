"""A plain WSGI app answering the bundled targets' two paths."""

PLAIN = b"Hello, World!"
JSON = b'{"message":"Hello, World!"}'


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/plaintext":
        status, body, ctype = "200 OK", PLAIN, "text/plain"
    elif path == "/json":
        status, body, ctype = "200 OK", JSON, "application/json"
    else:
        status, body, ctype = "404 Not Found", b"Not Found", "text/plain"
    start_response(status, [("Content-Type", ctype), ("Content-Length", str(len(body)))])
    return [body]
