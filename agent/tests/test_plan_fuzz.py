"""Property-based fuzzing of the plan parser (issue 12 item 7), seeded and bounded.

Hypothesis builds YAML and classic plans from hostile values (infinities, NaN, huge and negative
numbers, Unicode digits, options, path escapes, long names, aliases, deep nesting, ambiguous
units) and from mutations of their text. Every input must give either a clean :class:`PlanError`
(one line naming the file, exit 2 through the CLI) or a plan whose every value is within bounds -
never another exception. The counts are printed.
"""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from testbed_agent import workloads
from testbed_agent.plan import MAX_NAME_BYTES, MAX_REPETITIONS, MAX_SECONDS, PlanError, load_plan
from testbed_agent.workloads import known_keys


def mostly(common: st.SearchStrategy, rare: st.SearchStrategy, odds: int = 9) -> st.SearchStrategy:
    """``common`` ``odds`` times in ``odds + 1``, else ``rare`` (e.g. a scalar where a list belongs)."""
    return st.tuples(st.integers(0, odds), common, rare).map(lambda t: t[2] if t[0] == odds else t[1])


YAML_EXAMPLES = 1200
TEXT_EXAMPLES = 600

NAMES = [
    "systeminfo",
    "fio_4k_randread",
    "fio_1m_write",
    "dd_write",
    "SimplePrime.ipynb",
    "airline-delay-notebook.ipynb",
    "pyperformance",
    "faas_calcs",
    "aes-256-gcm",
    "/etc/passwd.ipynb",
    "../x.ipynb",
    "n" * 200,
    "a\x07b",
]
TYPES = ["fio", "dd", "sysinfo", "kaggle_notebook", "pyperformance", "faas", "crypto", "standard", "", "nope"]
KEYS = sorted(
    {k for t in ("fio", "dd", "pyperformance", "kaggle_notebook", "faas") for k in known_keys(t) or ()}
    | {"runtime", "sise", "alg", "languages", "payload_bytes", "a\nb", "\u202e"}
)
WORDS = ["1kB", "1k", "64M", "1KiB", "--help", "default", "quick", "\u0661\u0660", "\uff13", "a:b", "-1", "0"]
WORDS += [".inf", "nan", "1e308", "9" * 30, "x" * 300, "/dev/sda", "urandom", "direct", "fast", "calcs"]
SCALARS = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.sampled_from([0, 1, 3, -1, 2**53 + 1, 4096, 10**11]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(WORDS),
    st.text(max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    max_leaves=12,
)
#: mostly-valid values, so that accepted plans are checked too
NUMBERS = mostly(st.sampled_from([None, 1, 2, 5, 0.5, 30]), SCALARS, odds=3)
GOOD_PARAMS = st.sampled_from(
    [{}, {"size": "64M", "runtime_s": 3}, {"bs": "1k", "count": 4}, {"scale": "quick"}, {"mode": "fast"}]
)
PARAMS = mostly(
    GOOD_PARAMS, st.one_of(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4), VALUES), odds=1
)
BENCH = st.fixed_dictionaries(
    {"name": mostly(st.sampled_from(NAMES), SCALARS)},
    optional={
        "type": mostly(st.sampled_from(TYPES), SCALARS),
        "wait_s": NUMBERS,
        "repetitions": NUMBERS,
        "timeout_s": NUMBERS,
        "params": PARAMS,
        "datasets": st.sampled_from(["flights", "creditcard.csv", "../x", ["tweets"], 3]),
    },
)
DEFAULTS = st.fixed_dictionaries(
    {}, optional={"wait_s": NUMBERS, "repetitions": NUMBERS, "timeout_s": NUMBERS, "params": PARAMS}
)


PLAN = st.fixed_dictionaries(
    {"benchmarks": mostly(st.lists(BENCH, min_size=1, max_size=3), SCALARS)},
    optional={"name": mostly(st.just("p"), SCALARS), "defaults": mostly(DEFAULTS, SCALARS)},
)
FRAGMENTS = [
    "&a [*a]",
    "{",
    ": :",
    "\t",
    "!!python/object/apply:os.system ['id']",
    "*x",
    "[" * 60,
    "- ",
    "\x00",
]
FRAGMENTS += ["9" * 4400, "!!binary AAAA", "<<: 3", "? [a]\n: b", "%YAML 1.1\n---\n"]


def _dump(plan: dict) -> str:
    try:
        return yaml.safe_dump(plan, allow_unicode=True, sort_keys=False)
    except (yaml.YAMLError, ValueError):
        return "benchmarks: []\n"


def _mutate(text: str, position: int, fragment: str) -> str:
    at = position % (len(text) + 1)
    return text[:at] + fragment + text[at:]


def _check_accepted(plan_path: Path) -> str:
    """Load one plan; return the outcome class or raise on a traceback-worthy failure."""
    try:
        plan = load_plan(plan_path)
    except PlanError as exc:
        line = str(exc)
        assert "\n" not in line and line.startswith(str(plan_path)), line
        return "clean error"
    for b in plan.benchmarks:
        assert isinstance(b.repetitions, int) and 1 <= b.repetitions <= MAX_REPETITIONS
        assert math.isfinite(b.wait_s) and 0 <= b.wait_s <= MAX_SECONDS
        assert b.timeout_s is None or 0 < b.timeout_s <= MAX_SECONDS
        assert 0 < len(b.name.encode()) <= MAX_NAME_BYTES and b.name.isprintable()
        keys = known_keys(b.type)
        assert keys is None or set(b.params) <= keys
        # the benchmark itself, not only its params: crypto reads its algorithm from the name and
        # its weak keys from the plan's allow_weak_keys
        cls = workloads.get(b.type)
        if cls is not None:
            cls.parse(b)
    return "accepted"


@pytest.fixture(scope="module")
def counts() -> Counter:
    return Counter()


@pytest.mark.slow
def test_fuzzed_yaml_plans_never_traceback(counts: Counter, capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.yml"

        @seed(20261124)
        @settings(
            max_examples=YAML_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        @given(PLAN, st.booleans(), st.integers(min_value=0), st.sampled_from(FRAGMENTS))
        def check(plan: dict, mutate: bool, position: int, fragment: str) -> None:
            text = _dump(plan)
            if mutate:
                text = _mutate(text, position, fragment)
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            counts["yaml " + _check_accepted(path)] += 1

        check()
    with capsys.disabled():
        print(f"\nplan fuzzing (yaml): {dict(counts)}")


@pytest.mark.slow
def test_fuzzed_classic_plans_never_traceback(counts: Counter, capsys: pytest.CaptureFixture[str]) -> None:
    field = st.sampled_from(NAMES + TYPES + WORDS + ["flights;tweets", " 10 ", "", "#x"]) | st.text(
        max_size=8
    )
    line = st.lists(field, min_size=1, max_size=6).map(",".join)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.txt"

        @seed(20261124)
        @settings(
            max_examples=TEXT_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        @given(st.lists(line, max_size=5))
        def check(lines: list[str]) -> None:
            path.write_bytes("\n".join(lines).encode("utf-8", errors="surrogatepass"))
            counts["text " + _check_accepted(path)] += 1

        check()
    total = sum(counts.values())
    with capsys.disabled():
        print(f"\nplan fuzzing: {total} inputs, {dict(sorted(counts.items()))}, 0 tracebacks")
