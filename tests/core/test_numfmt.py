import pytest

from icount import numfmt


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (7, "7"),
        (999, "999"),
        (56.25, "56.25"),
        (1000, "1.000k"),
        (3102.4, "3.102k"),
        (13012, "13.01k"),
        (312930, "312.9k"),
        (999_999, "1.000M"),
        (56_000, "56.00k"),
        (1_234_567, "1.235M"),
        (29_860_000_000, "29.86G"),
        (-3102.4, "-3.102k"),
        (float("nan"), "-"),
    ],
)
def test_si(value: float, text: str) -> None:
    assert numfmt.si(value) == text


def test_median_range_and_percent() -> None:
    assert numfmt.median_range(13012, 13010, 13015) == "13.01k (13.01k-13.02k)"
    assert numfmt.percent(0.0123) == "1.23%"
    assert numfmt.signed_percent(0.015) == "+1.50%"
    assert numfmt.signed_percent(-0.00001) == "0.00%"
    assert numfmt.plain(3102.0) == "3102"
    assert numfmt.plain(3102.4567) == "3102.457"
    assert numfmt.human_bytes(1536) == "1.50 KiB"
    assert numfmt.human_bytes(12) == "12 B"
