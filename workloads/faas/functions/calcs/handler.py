"""CPU and memory stress function: random multiply/divide over operand arrays.

Each of ``function_calls`` calls fills three operand arrays of ``array_size`` random doubles and
computes ``a * b / c`` element by element, so the work is ``array_size x function_calls``
calculations and the memory held is ``3 x 8 x array_size`` bytes. ``level`` (0-8) picks one of
the nine stress levels instead: the array size grows with the level, so higher levels stress
memory as well as CPU (level 8 holds 72 MB of operands).
Deployable unchanged: ``handler(event, context)``, standard library only.
"""

import random
import time
from array import array

#: stress levels: (calculations, array_size, function_calls); 0 ... 6,000,000 calculations.
#: The end points follow the study; the steps and array sizes between them are this toolkit's choice.
LEVELS = (
    (0, 0, 0),
    (1_000, 1_000, 1),
    (10_000, 10_000, 1),
    (100_000, 100_000, 1),
    (500_000, 250_000, 2),
    (1_000_000, 500_000, 2),
    (2_000_000, 1_000_000, 2),
    (4_000_000, 2_000_000, 2),
    (6_000_000, 3_000_000, 2),
)


def _one_call(rng, size):
    a = array("d", (rng.randint(1, 1000) for _ in range(size)))
    b = array("d", (rng.randint(1, 1000) for _ in range(size)))
    c = array("d", (rng.randint(1, 1000) for _ in range(size)))
    acc = 0.0
    for x, y, z in zip(a, b, c, strict=True):
        acc += x * y / z
    return acc


def handler(event, context):
    event = event or {}
    if "level" in event:
        level = int(event["level"])
        if not 0 <= level < len(LEVELS):
            raise ValueError(f"level must be 0-{len(LEVELS) - 1}")
        _, size, calls = LEVELS[level]
    else:
        size, calls = int(event.get("array_size", 20)), int(event.get("function_calls", 1000))
    rng = random.Random(event.get("seed", 42))  # noqa: S311 - operands, not secrets
    t0 = time.perf_counter()
    checksum = 0.0
    for _ in range(calls):
        checksum += _one_call(rng, size)
    elapsed = time.perf_counter() - t0
    calcs = size * calls
    return {
        "calcs": calcs,
        "array_size": size,
        "function_calls": calls,
        "array_bytes": 3 * 8 * size,
        "checksum": checksum,
        "elapsed_s": elapsed,
        "calcs_per_s": calcs / elapsed if elapsed > 0 else 0.0,
    }
