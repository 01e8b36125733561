"""CPU stress function: random multiply/divide over operand arrays.

Each of ``function_calls`` calls fills three operand arrays of ``array_size`` random values and
computes ``a * b / c`` element by element, so the work is ``array_size x function_calls``
calculations. ``level`` (0-8) picks one of the nine stress levels instead.
Deployable unchanged: ``handler(event, context)``, standard library only.
"""

import random
import time

#: stress levels: (calculations, array_size, function_calls); 0/0/0 ... 6,000,000/20/300,000.
#: The end points follow the study; the steps between them are this toolkit's choice.
LEVELS = (
    (0, 0, 0),
    (1_000, 20, 50),
    (10_000, 20, 500),
    (100_000, 20, 5_000),
    (500_000, 20, 25_000),
    (1_000_000, 20, 50_000),
    (2_000_000, 20, 100_000),
    (4_000_000, 20, 200_000),
    (6_000_000, 20, 300_000),
)


def _one_call(rng, size):
    a = [rng.randint(1, 1000) for _ in range(size)]
    b = [rng.randint(1, 1000) for _ in range(size)]
    c = [rng.randint(1, 1000) for _ in range(size)]
    acc = 0.0
    for i in range(size):
        acc += a[i] * b[i] / c[i]
    return acc


def handler(event, context):
    event = event or {}
    if "level" in event:
        _, size, calls = LEVELS[int(event["level"])]
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
        "checksum": checksum,
        "elapsed_s": elapsed,
        "calcs_per_s": calcs / elapsed if elapsed > 0 else 0.0,
    }
