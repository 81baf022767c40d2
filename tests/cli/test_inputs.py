"""Every file icount reads is read as a bounded regular file: a FIFO would block it, a
device never ends (`icount report /dev/zero` read until the kernel killed it). Each is
one line naming the file and exit 6, in seconds."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Icount = Callable[..., Any]

READERS = {
    "table": ["table", "{}"],
    "compare": ["compare", "{}", "{}"],
    "report": ["report", "{}", "-o", "r.html"],
    "run --file": ["run", "--file", "{}"],
    "serve ADAPTER": ["serve", "--backend", "callgrind", "{}"],
}


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("reader", list(READERS))
def test_fifos_and_devices_are_refused_unread(
    icount: Icount, tmp_path: Path, reader: str, special: str
) -> None:
    if special == "fifo":
        special = str(tmp_path / "fifo.toml")
        os.mkfifo(special)
    args = [a.replace("{}", special) for a in READERS[reader]]
    done = icount(*args, cwd=tmp_path, timeout=60)
    assert done.returncode == 6, done.stderr
    assert (
        done.stderr
        == f"icount: error: {special}: is not a regular file (a FIFO, socket or device)\n"
    )


def test_serve_resume_never_reads_a_fifo_provenance(icount: Icount, tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(
        '{"format": "icount-results", "version": 2, "fingerprint": {}, "cells": []}'
    )
    os.mkfifo(tmp_path / "s.provenance.json")
    done = icount("serve", "--resume", "s.json", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "no record of what" in done.stderr and done.stderr.count("\n") == 1
