"""The quick run's comparison: pairs analysed as pairs, a fresh arm order each run, a headline in
words (issues 30, 34 item 7 and 37 item 1).

``make run`` opens its report with fio through the agent against bare fio (bench/agent_vs_bare.py:
alternating pairs, each arm's record carrying ``block: pair-N``). These tests show:

- seeded simulation with known truth in the quick comparison's layout (5 pairs, one machine each,
  a state both arms of a pair share: the page cache, the disk's current speed), through the report's
  own ``compare``: the pairs are analysed as pairs (unit ``pair``), a null difference is called
  slower or faster at most at the nominal rate, and a 3 % difference is found more often than by
  the analysis of two independent samples it replaced;
- live: the same pairs with the bare arm slowed on purpose (fio's --rate) give a report whose
  headline says, with both values, that the agent arm is faster; two runs without ``--seed`` draw
  their own orders, and the seed is in the records.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from repotest import ROOT

from testbed_reports.compare import Pair, compare
from testbed_reports.stats import describe

PAIRS = 5
PAIR = [Pair("fio via agent", "bare fio", "explicit")]
TRIALS = 120


def _obs(
    rng: np.random.Generator, truth: float, shared: float, noise: float, blocks: bool = True
) -> pd.DataFrame:
    """One simulated quick comparison: read bandwidth of ``PAIRS`` pairs, agent = bare x truth, a
    state of sd ``shared`` (log) common to both arms of a pair, and run noise ``noise``."""
    state = rng.normal(0, shared, PAIRS)
    arms = {
        ("fio-agent", "fio via agent"): 1.2e8 * truth * np.exp(state + rng.normal(0, noise, PAIRS)),
        ("fio-bare", "bare fio"): 1.2e8 * np.exp(state + rng.normal(0, noise, PAIRS)),
    }
    rows = [
        {
            "run_id": "sim",
            "host": host,
            "label": label,
            "groups": "",
            "benchmark": "fio_4k_randread",
            "type": "fio",
            "metric": "read_bw_bytes",
            "unit": "B/s",
            "better": "higher",
            "repetition": i,
            "started_at": f"2026-01-01T00:{i:02d}:0{j}Z",
            "record": 2 * i + j,
            "primary": True,
            "value": float(v),
            **({"block": f"pair-{i}"} if blocks else {}),
        }
        for j, ((host, label), values) in enumerate(arms.items())
        for i, v in enumerate(values)
    ]
    obs = pd.DataFrame(rows)
    for col in ("run_id", "host", "label", "groups", "benchmark", "type", "metric", "unit", "better"):
        obs[col] = obs[col].astype("category")
    return obs


def _decide(obs: pd.DataFrame) -> pd.Series:
    """The report's comparison (drift notes, which change no decision, left out for speed)."""
    return compare(obs, describe(obs), PAIR, drift={}).iloc[0]


def _rates(truth: float, shared: float, noise: float, seed: int, blocks: bool = True) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    out = {"slower": 0, "faster": 0, "equivalent": 0, "inconclusive": 0}
    for _ in range(TRIALS):
        out[_decide(_obs(rng, truth, shared, noise, blocks))["decision"]] += 1
    return {k: v / TRIALS for k, v in out.items()}


def test_the_pairs_are_analysed_as_pairs() -> None:
    rng = np.random.default_rng(29)
    row = _decide(_obs(rng, 1.0, 0.05, 0.01))
    assert row["test_unit"] == "pair" and row["n_a"] == row["n_b"] == PAIRS
    unpaired = _decide(_obs(rng, 1.0, 0.05, 0.01, blocks=False))
    assert unpaired["test_unit"] == "run"


@pytest.mark.slow
@pytest.mark.parametrize(("shared", "noise"), [(0.1, 0.02), (0.0, 0.3)])
def test_no_true_difference_is_rarely_called_slower_or_faster(shared: float, noise: float) -> None:
    got = _rates(1.0, shared, noise, seed=30)
    # nominal 5 %; binomial(120, 0.05) exceeds 14 (11.7 %) with probability < 1e-3
    assert got["slower"] + got["faster"] <= 14 / TRIALS, got


@pytest.mark.slow
def test_pairing_finds_a_three_percent_difference_more_often() -> None:
    """A pair's two arms share a state (sd 3 %) beside 1 % run noise: the analysis of two independent
    samples it replaced found a 3 % difference in far fewer data sets."""
    paired = _rates(1.03, 0.03, 0.01, seed=31)
    unpaired = _rates(1.03, 0.03, 0.01, seed=31, blocks=False)
    print(f"\npaired {paired}\nunpaired {unpaired}")
    assert paired["faster"] >= 0.5 and paired["faster"] >= unpaired["faster"] + 0.2, (paired, unpaired)
    assert paired["slower"] == 0


def _run(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["--pairs", "3", "--job", "fio_64k_read", "--ioengine", "null", "--runtime", "1", "--size", "16M"]
    return subprocess.run(
        [sys.executable, str(ROOT / "bench/agent_vs_bare.py"), "--out", str(out), *args, *extra],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.integration
def test_a_slowed_bare_arm_turns_the_live_decision(tmp_path: Path) -> None:
    """Real pairs on fio's CPU-bound null engine; the bare arm capped at 500 MB/s (tens of GB/s
    uncapped), so the agent arm must come out faster, and the headline says so in words."""
    out = tmp_path / "results"
    run = _run(out, "--bare-fio-arg=--rate=500m")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    seed = int(re.search(r"arm order seed (\d+)", run.stdout).group(1))
    report = tmp_path / "report"
    build = subprocess.run(
        [
            str(Path(sys.executable).parent / "testbed-report"),
            "build",
            str(out),
            "--out",
            str(report),
            "--compare",
            "fio via agent:bare fio",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    stats = json.loads((report / "stats.json").read_text())
    primary = [c for c in stats["comparisons"] if c["primary"]]
    assert len(primary) == 1 and primary[0]["metric"] == "read_bw_bytes"
    assert primary[0]["test_unit"] == "pair"
    assert primary[0]["decision"] == "faster", primary[0]["verdict"]
    words = r"fio via agent( machine fio-agent)? [\d.,]+ [kMG]?B/s, "
    words += r"bare fio( machine fio-bare)? [\d.,]+ [kMG]?B/s: "
    words += r"fio via agent( machine fio-agent)? is [\d.,]+% faster \[[\d.,]+, [\d.,]+\]"
    assert re.search(words, primary[0]["verdict"]), primary[0]["verdict"]
    html = (report / "index.html").read_text()
    assert re.search(words, html)  # the headline: both values with their unit, the agent arm faster
    bare = [json.loads(x) for x in (out / "fio-bare.jsonl").read_text().splitlines()]
    agent = [json.loads(x) for x in (out / "fio-agent.jsonl").read_text().splitlines()]
    assert all(r["params"]["fio_extra"] == ["--rate=500m"] for r in bare)  # the slowdown is on record
    assert [r["block"] for r in bare] == [r["block"] for r in agent] == ["pair-0", "pair-1", "pair-2"]
    assert {r["params"]["order_seed"] for r in bare + agent} == {seed}
    assert all(r["primary"] == ["read_bw_bytes"] for r in bare)


@pytest.mark.integration
def test_each_run_draws_its_own_order_and_a_seed_reproduces_it(tmp_path: Path) -> None:
    def order(out: Path) -> list[str]:
        recs = [
            json.loads(x)
            for f in ("fio-agent", "fio-bare")
            for x in (out / f"{f}.jsonl").read_text().splitlines()
        ]
        return [r["host"] for r in sorted(recs, key=lambda r: r["started_at"])]

    seeds = []
    for k in range(2):
        run = _run(tmp_path / f"r{k}")
        assert run.returncode == 0, run.stderr[-2000:]
        seeds.append(int(re.search(r"arm order seed (\d+)", run.stdout).group(1)))
    assert seeds[0] != seeds[1]  # two draws of 2^31 agree with probability 5e-10
    # the first run's drawn seed, given back, runs the arms in that run's order
    again = _run(tmp_path / "s0", "--seed", str(seeds[0]))
    assert again.returncode == 0, again.stderr[-2000:]
    assert order(tmp_path / "s0") == order(tmp_path / "r0")
