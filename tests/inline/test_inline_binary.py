"""Symbol sizes of `icount inline` against nm."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from icount.inline.binary import read_binary

from .common import EXE_B


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (package binutils) is not installed")
def test_sizes_agree_with_nm() -> None:
    out = subprocess.run(["nm", "-S", str(EXE_B)], capture_output=True, text=True, check=True)
    nm_sizes = {
        parts[3]: int(parts[1], 16)
        for parts in (line.split() for line in out.stdout.splitlines())
        if len(parts) == 4 and parts[2] in "tT"
    }
    info = read_binary(EXE_B)
    for name in ("main", "fib", "mix"):
        assert info.sizes[name] == nm_sizes[name]
