"""`by_default = false`: a bundled target measured only when named (jvm-http, whose cells
take minutes), named with the reason by a bare `icount serve`."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.errors import ParseError
from icount.serve import adapter as adapters
from icount.serve.targets import choose_targets

ADAPTER = """
start = ["{{build}}/x", "--port", "{{port}}"]
{extra}
[[paths]]
name = "plaintext"
target = "/plaintext"
"""


def _folder(root: Path, name: str, extra: str = "") -> Path:
    (root / name).mkdir()
    toml = root / name / adapters.ADAPTER_FILE
    toml.write_text(ADAPTER.format(extra=extra))
    return toml


def test_a_target_not_by_default_is_named_not_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(tmp_path, "quick")
    _folder(tmp_path, "slow", "by_default = false")
    monkeypatch.setenv(adapters.ADAPTERS_ENV, str(tmp_path))
    chosen = choose_targets([], None)
    assert [a.name for a in chosen.adapters] == ["quick"]
    assert chosen.skipped == (("slow", "measured only when named (icount serve slow)"),)
    named = choose_targets(["slow"], None)
    assert [a.name for a in named.adapters] == ["slow"]


def test_by_default_must_be_a_boolean(tmp_path: Path) -> None:
    toml = _folder(tmp_path, "bad", 'by_default = "no"')
    with pytest.raises(ParseError, match="'by_default' must be a boolean, not str"):
        adapters.load_adapter(toml)


def test_the_bundled_jvm_target_is_named_only() -> None:
    jvm = adapters.adapters_dir() / "jvm-http" / adapters.ADAPTER_FILE
    assert adapters.load_adapter(jvm).by_default is False


def test_the_advice_for_an_unknown_target_works_when_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`no adapter 'mine'` says to give the adapter's folder or file, or ICOUNT_ADAPTERS:
    each of the three then finds it."""
    from icount.errors import UsageError

    toml = _folder(tmp_path, "mine")
    with pytest.raises(UsageError) as refused:
        choose_targets(["mine"], None)
    assert refused.value.hint is not None
    assert "the folder holding it" in refused.value.hint
    assert f"{adapters.ADAPTERS_ENV}=DIR" in refused.value.hint
    assert [a.name for a in choose_targets([str(toml.parent)], None).adapters] == ["mine"]
    assert [a.name for a in choose_targets([str(toml)], None).adapters] == ["mine"]
    monkeypatch.setenv(adapters.ADAPTERS_ENV, str(tmp_path))
    assert [a.name for a in choose_targets(["mine"], None).adapters] == ["mine"]
