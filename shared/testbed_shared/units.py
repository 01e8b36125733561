"""The one size grammar of plans (docs/plans.md "Sizes"): fio ``size``, dd ``bs``, crypto
``payload_bytes``, ``file_sizes`` and ``chunk_bytes``.

A size is a whole number of bytes (a YAML integer, or digits), or digits followed by a binary unit:
``k``, ``m``, ``g``, ``t``, ``p`` in either case, or ``KiB``, ``MiB``, ``GiB``, ``TiB``, ``PiB``
(k = 1024, as fio's and dd's ``K`` are), with optional spaces between. Refused, with the reason:
``kB``/``KB``/``MB``... (dd reads them as powers of 1000, fio as powers of 1024: one plan would mean
two sizes), fractions (``1.5k``: neither tool takes them), negative numbers, booleans and floats,
non-ASCII digits, anything else. Memory is given in whole MB as ``memory_mb`` (an integer), not as a
size.
"""

from __future__ import annotations

import re
from typing import Any

_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
_SIZE = re.compile(r"([0-9]{1,15})\s*(?:([kmgtp])|([kmgtp])ib)?", re.ASCII | re.IGNORECASE)
_FRACTION = re.compile(r"[0-9]*\.[0-9]+\s*[kmgtp]?(i?b)?", re.ASCII | re.IGNORECASE)
_AMBIGUOUS = re.compile(r"[0-9]+\s*[kmgtp]b", re.ASCII | re.IGNORECASE)


class SizeError(ValueError):
    """A value that is not a size; the message says why."""


def parse_size(value: Any) -> int:
    """Bytes of a size as a plan writes it (module docstring); raise :class:`SizeError`."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SizeError(f"expected a size such as 4k, 64M or 1GiB, got {value!r:.60}")
    if isinstance(value, int):
        if value < 0:
            raise SizeError(f"a size is not negative, got {value}")
        return value
    text = value.strip()
    if _AMBIGUOUS.fullmatch(text):
        whole = text[:-1].rstrip()
        raise SizeError(
            f"ambiguous size {text!r}: dd reads kB as 1000, fio as 1024; write {whole} or {whole}iB (1024)"
        )
    if _FRACTION.fullmatch(text):
        raise SizeError(f"not a whole number of units: {text!r} (write bytes or a smaller unit, e.g. 1536k)")
    m = _SIZE.fullmatch(text)
    if not m:
        raise SizeError(f"not a size: {value!r:.60} (digits with k, m, g, t, p or KiB, MiB, GiB, TiB, PiB)")
    unit = (m.group(2) or m.group(3) or "").lower()
    return int(m.group(1)) * _MULT[unit]
