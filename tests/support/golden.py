"""Golden files: rendered output compared byte for byte with a committed file.

`ICOUNT_UPDATE_GOLDEN=1 pytest ...` rewrites the files instead; review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

UPDATE = "ICOUNT_UPDATE_GOLDEN"


def assert_golden(path: Path, text: str) -> None:
    if os.environ.get(UPDATE):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run with {UPDATE}=1 to write it"
    assert text == path.read_text(), f"output differs from {path} ({UPDATE}=1 rewrites it)"
