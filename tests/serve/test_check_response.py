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
        "header content-type is 'text/html', expected media type text/plain (with any parameters)"
    )
    other = Expect(200, {"server": "c-epoll"})
    assert check_response(other, 200, {"server": "c-epoll/2"}, b"") == (
        "header server is 'c-epoll/2', expected 'c-epoll'"
    )


def test_content_type_is_matched_as_a_media_type() -> None:
    """aiohttp and Express add `; charset=utf-8` to `text/plain`: type and subtype match
    without case, and the expectation's parameters must be there (others may be)."""
    for got in ("text/plain; charset=utf-8", "Text/Plain", "text/plain;charset=UTF-8",
                'text/plain ; charset="utf-8"; format=flowed', "text/plain;"):  # fmt: skip
        assert check_response(PLAIN, 200, {"content-type": got}, b"Hello, World!") is None, got
    utf8 = Expect(200, {"content-type": "text/plain; charset=UTF-8"}, b"x")
    for got in ("text/plain;charset=utf-8", 'TEXT/plain; Charset="utf-8"; x=1'):
        assert check_response(utf8, 200, {"content-type": got}, b"x") is None, got
    refusal = "expected media type text/plain; charset=utf-8 (other parameters allowed)"
    for got in ("text/plain", "text/plain; charset=latin-1", "text/html; charset=utf-8"):
        assert check_response(utf8, 200, {"content-type": got}, b"x") == (
            f"header content-type is {got!r}, {refusal}"
        )
    for bad in ("text", "text/plain; charset", "text/plain garbage", "/plain", ""):
        assert check_response(PLAIN, 200, {"content-type": bad}, b"Hello, World!") == (
            f"header content-type is {bad!r}, expected media type text/plain (with any parameters)"
        ), bad


def test_a_content_type_expectation_that_is_no_media_type_is_compared_as_text() -> None:
    odd = Expect(200, {"content-type": "plain text"}, b"x")
    assert check_response(odd, 200, {"content-type": "plain text"}, b"x") is None
    assert check_response(odd, 200, {"content-type": "text/plain"}, b"x") == (
        "header content-type is 'text/plain', expected 'plain text'"
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


def test_mutated_content_types_give_a_match_or_one_line() -> None:
    """Mutants of media types (seeded): never an exception, a match only for text/plain."""
    import random

    rng = random.Random(24)
    alphabet = 'text/plain; charset="utf-8"\\\r\n\t\x00=;/ é'
    for _ in range(3000):
        got = "".join(rng.choice(alphabet) for _ in range(rng.randrange(30)))
        diff = check_response(PLAIN, 200, {"content-type": got}, b"Hello, World!")
        if diff is None:
            assert got.strip().lower().startswith("text/plain"), got
        else:
            assert diff.startswith("header content-type is ") and "\n" not in diff, diff
