"""Size strings as fio and dd write them ("4k", "64K", "1m", "1G", "128KiB") to bytes."""

from __future__ import annotations

import re

_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


def parse_size(text: str | int) -> int:
    """Bytes of a size; binary multiples (k = 1024) as fio's and dd's defaults are."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"negative size {text}")
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*", str(text), re.I)
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(float(m.group(1)) * _SUFFIX[m.group(2).lower()])
