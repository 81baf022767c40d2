"""Whether two paths name one file: the same path resolved, or (both existing) the same
inode, as a hard link or a bind mount gives, so that an output never replaces the input,
ledger or results file it also names under another name."""

from __future__ import annotations

import os
from pathlib import Path


def same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): not the same file
        return False
