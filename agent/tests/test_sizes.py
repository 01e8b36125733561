"""One size grammar for plans (issue 28; docs/plans.md "Sizes"): every spelling below means the same
bytes, or is refused for the same reason, in fio ``size``, dd ``bs`` and crypto ``file_sizes``."""

from __future__ import annotations

import pytest

from testbed_agent.benchmark import Benchmark
from testbed_agent.params import ParamError
from testbed_agent.workloads import parse_params
from testbed_agent.workloads.crypto import Crypto
from testbed_shared.units import SizeError, parse_size

K, M, G, T, P = 1 << 10, 1 << 20, 1 << 30, 1 << 40, 1 << 50

ACCEPTED = [
    (4096, 4096, "a YAML integer is bytes"),
    ("4096", 4096, "digits are bytes"),
    ("0", 0, "zero"),
    ("4k", 4 * K, "k is 1024, as fio's and dd's"),
    ("4K", 4 * K, "either case"),
    ("4 k", 4 * K, "spaces between number and unit"),
    (" 64M ", 64 * M, "surrounding spaces"),
    ("4KiB", 4 * K, "KiB is 1024"),
    ("4kib", 4 * K, "KiB in any case"),
    ("1g", G, "g"),
    ("1GiB", G, "GiB"),
    ("2t", 2 * T, "t"),
    ("1p", P, "p (PiB)"),
    ("1PiB", P, "PiB"),
]
REFUSED = [
    ("4kB", "ambiguous size", "dd reads kB as 1000, fio as 1024"),
    ("4KB", "ambiguous size", "KB too"),
    ("64MB", "ambiguous size", "MB too"),
    ("1 gb", "ambiguous size", "in any case"),
    ("1.5k", "not a whole number of units", "neither tool takes fractions"),
    (".5m", "not a whole number of units", "a fraction without a leading digit"),
    ("1.5", "not a whole number of units", "fractional bytes"),
    (-1, "not negative", "a negative integer"),
    ("-1k", "not a size", "a negative size"),
    (True, "expected a size", "a boolean is not a number of bytes"),
    (1.0, "expected a size", "a float is not a number of bytes"),
    (None, "expected a size", "nothing"),
    ("", "not a size", "empty"),
    ("k", "not a size", "a unit without a number"),
    ("4x", "not a size", "an unknown unit"),
    ("4e3", "not a size", "exponent notation"),
    ("0x10", "not a size", "hexadecimal"),
    ("\u0661k", "not a size", "non-ASCII digits"),
    ("1234567890123456", "not a size", "more than 15 digits"),
]


@pytest.mark.parametrize(("text", "expected", "why"), ACCEPTED)
def test_accepted_spellings(text: object, expected: int, why: str) -> None:
    assert parse_size(text) == expected, why


@pytest.mark.parametrize(("text", "words", "why"), REFUSED)
def test_refused_spellings_say_why(text: object, words: str, why: str) -> None:
    with pytest.raises(SizeError, match=words):
        parse_size(text)


@pytest.mark.parametrize(("text", "expected", "why"), [a for a in ACCEPTED if 4 * K <= a[1] <= G])
def test_fio_dd_and_crypto_read_a_size_alike(text: object, expected: int, why: str) -> None:
    assert parse_params("fio", {"size": text}).size == expected
    assert parse_params("dd", {"bs": text}).bs == expected
    crypto = Crypto.parse(Benchmark("aes-256-cbc", "crypto", 0, 1, params={"file_sizes": [text]}))
    assert crypto.file_sizes == (expected,)


@pytest.mark.parametrize(("text", "words", "why"), [r for r in REFUSED if r[0] is not None])
def test_fio_dd_and_crypto_refuse_a_size_alike(text: object, words: str, why: str) -> None:
    for btype, key in (("fio", "size"), ("dd", "bs")):
        with pytest.raises(ParamError, match=words) as err:
            parse_params(btype, {key: text})
        assert err.value.field == f"params.{key}"
    with pytest.raises(ParamError, match=words) as err:
        Crypto.parse(Benchmark("aes-256-cbc", "crypto", 0, 1, params={"file_sizes": [text]}))
    assert err.value.field == "params.file_sizes"


@pytest.mark.parametrize("text", ["4kB", "1.5k"])
def test_a_plan_refuses_the_same_spelling_in_every_size_field(tmp_path, text: str) -> None:
    """Regression (issue 28): crypto's sizes went through a laxer parser than fio's and dd's, so
    ``file_sizes: [4kB]`` ran as 4096 bytes where ``bs: 4kB`` was refused."""
    from testbed_agent.plan import load_plan
    from testbed_shared.errors import PlanError

    for entry in (
        f"{{name: dd_x, type: dd, params: {{bs: '{text}'}}}}",
        f"{{name: fio_4k_randread, type: fio, params: {{size: '{text}'}}}}",
        f"{{name: aes-256-cbc, type: crypto, params: {{file_sizes: ['{text}']}}}}",
    ):
        plan = tmp_path / "p.yml"
        plan.write_text(f"benchmarks:\n  - {entry}\n")
        with pytest.raises(PlanError, match=r"ambiguous size|not a whole number"):
            load_plan(plan)
