"""Reference figures from callgrind_annotate (valgrind's own reader), for cross-checks."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

_NUM = r"(?:[\d,]+|\.)(?: \(\s*[\d.]+%\))?"
_FN_LINE = re.compile(rf"^\s*({_NUM})\s+(\S.*?)(?: \[(.*)\])?$")


@dataclass
class Annotated:
    program_totals: list[int]  # callgrind_annotate's PROGRAM TOTALS (summary: when present)
    self_by_name: dict[str, int]  # first shown event, summed over files and objects


def _value(text: str) -> int:
    text = text.split("(")[0].strip()
    return 0 if text == "." else int(text.replace(",", ""))


def have_annotate() -> bool:
    return shutil.which("callgrind_annotate") is not None


def annotate(path: Path, event: str | None = None) -> Annotated:
    argv = ["callgrind_annotate", "--threshold=100", "--auto=no"]
    if event:
        argv.append(f"--show={event}")
    out = subprocess.run(
        [*argv, str(path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    totals_line = next(line for line in out if line.endswith("PROGRAM TOTALS"))
    cells = re.findall(_NUM, totals_line.removesuffix("PROGRAM TOTALS"))
    totals = [_value(c) for c in cells]
    start = next(i for i, line in enumerate(out) if line.rstrip().endswith("file:function"))
    self_by_name: dict[str, int] = defaultdict(int)
    for line in out[start + 2 :]:
        if not line.strip():
            continue
        m = _FN_LINE.match(line)
        if m is None:
            break
        _file, _, name = m.group(2).partition(":")
        self_by_name[name] += _value(m.group(1))
    return Annotated(totals, dict(self_by_name))
