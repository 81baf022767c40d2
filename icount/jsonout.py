"""The one JSON encoding icount writes, for every document it prints or saves."""

from __future__ import annotations

import json
from typing import Any


def dumps(obj: Any) -> str:
    """Sorted keys, 2-space indent, UTF-8 kept, final newline; NaN and infinities are
    refused (ValueError): no reader could trust them."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
