"""check_response: None on a match, else one line naming the first difference."""

from __future__ import annotations

from icount.serve.adapter import Expect, check_response

PLAIN = Expect(200, {"content-type": "text/plain"}, b"Hello, World!")
JSON = Expect(200, {"content-type": "application/json"}, None, {"message": "Hello, World!"})
HDRS = {"content-type": "text/plain", "content-length": "13"}


def test_match() -> None:
    assert check_response(PLAIN, 200, HDRS, b"Hello, World!") is None


def test_status() -> None:
    assert check_response(PLAIN, 500, HDRS, b"Hello, World!") == "status 500, expected 200"


def test_header_missing_and_different() -> None:
    assert check_response(PLAIN, 200, {}, b"Hello, World!") == (
        "header content-type missing, expected 'text/plain'"
    )
    assert check_response(PLAIN, 200, {"content-type": "text/html"}, b"Hello, World!") == (
        "header content-type is 'text/html', expected 'text/plain'"
    )


def test_header_names_are_case_insensitive() -> None:
    assert check_response(PLAIN, 200, {"Content-Type": "text/plain"}, b"Hello, World!") is None


def test_body_difference_names_the_byte() -> None:
    got = check_response(PLAIN, 200, HDRS, b"Hello, Wurld!")
    assert got == (
        "body differs at byte 8 (13 bytes, expected 13): "
        "got b'Hello, Wurld!' expected b'Hello, World!'"
    )


def test_body_shorter_and_longer() -> None:
    assert check_response(PLAIN, 200, HDRS, b"Hello") == (
        "body differs at byte 5 (5 bytes, expected 13): got b'Hello' expected b'Hello, World!'"
    )
    longer = check_response(PLAIN, 200, HDRS, b"Hello, World!!")
    assert longer is not None and longer.startswith("body differs at byte 13 (14 bytes")


def test_body_difference_is_one_bounded_line() -> None:
    big = Expect(200, {}, b"a" * 100_000)
    got = check_response(big, 200, {}, b"a" * 50_000 + b"b" * 50_000)
    assert got is not None and "\n" not in got and len(got) < 200
    assert got.startswith("body differs at byte 50000 ")


def test_json_equality_ignores_formatting() -> None:
    assert check_response(JSON, 200, {"content-type": "application/json"},
                          b'{ "message" : "Hello, World!" }') is None  # fmt: skip


def test_json_differs_and_not_json() -> None:
    hdrs = {"content-type": "application/json"}
    assert check_response(JSON, 200, hdrs, b'{"message":"Bye"}') == (
        'JSON body differs: got {"message":"Bye"} expected {"message":"Hello, World!"}'
    )
    assert check_response(JSON, 200, hdrs, b"<html>") == "body is not JSON: b'<html>'"


def test_status_only_expectation() -> None:
    assert check_response(Expect(404), 404, {}, b"anything") is None
