"""The calculations service of the serverless factors study (S3 L118-131): random math on heap arrays.

A request allocates three operand arrays of ``array_size`` random doubles (two multiplication
operands and one divisor), then makes ``function_calls`` calls of a function that each perform
``calcs / function_calls`` calculations ``a[i] * b[j] / c[k]``, every operand read from a random
position of its array (so a large array adds page faults: memory stress; many calls add call-stack
work). ``{"level": 1..9}`` picks one of the study's nine stress levels (its Table I, S3 L120-131);
``{"calcs": N, "array_size": A, "function_calls": F}`` any other configuration (``calcs`` defaults
to ``A x F``). Deployable unchanged: ``handler(event, context)``, standard library only.
"""

import random
import time
from array import array

#: Table I of the study (S3 L120-131): stress level -> (calculations, operand array size, function calls)
LEVELS = {
    1: (0, 0, 0),
    2: (2_000, 100, 20),
    3: (20_000, 1_000, 20),
    4: (200_000, 10_000, 20),
    5: (500_000, 25_000, 20),
    6: (2_000_000, 100_000, 20),
    7: (10_000_000, 10_000, 1_000),
    8: (10_000_000, 100, 100_000),
    9: (6_000_000, 20, 300_000),
}


def _calculate(rng, a, b, c, count):
    """``count`` calculations with operands at random positions; returns their sum."""
    n = len(a)
    r = rng.random
    acc = 0.0
    for _ in range(count):
        acc += a[int(r() * n)] * b[int(r() * n)] / c[int(r() * n)]
    return acc


def handler(event, context):
    event = event or {}
    if "level" in event:
        level = int(event["level"])
        if level not in LEVELS:
            raise ValueError(f"level must be 1-9 (the study's Table I), not {level}")
        calcs, size, calls = LEVELS[level]
    else:
        size, calls = int(event.get("array_size", 20)), int(event.get("function_calls", 1000))
        calcs = int(event.get("calcs", size * calls))
    if calcs and (size < 1 or calls < 1):
        raise ValueError("calculations need array_size >= 1 and function_calls >= 1")
    rng = random.Random(event.get("seed"))  # noqa: S311 - operands and positions, not secrets
    t0 = time.perf_counter()
    a = array("d", (rng.uniform(1.0, 1000.0) for _ in range(size)))
    b = array("d", (rng.uniform(1.0, 1000.0) for _ in range(size)))
    c = array("d", (rng.uniform(1.0, 1000.0) for _ in range(size)))
    per_call, extra = divmod(calcs, calls) if calls else (0, 0)
    checksum = 0.0
    for k in range(calls):
        checksum += _calculate(rng, a, b, c, per_call + (1 if k < extra else 0))
    elapsed = time.perf_counter() - t0
    return {
        "calcs": calcs,
        "array_size": size,
        "function_calls": calls,
        "array_bytes": 3 * 8 * size,
        "checksum": checksum,
        "elapsed_s": elapsed,
        "calcs_per_s": calcs / elapsed if elapsed > 0 else 0.0,
    }
