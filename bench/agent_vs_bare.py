"""fio through the agent against the same fio job run bare, in alternating pairs, as result records.

``make run`` uses it so the quick run's report compares two things any machine has: label
``fio via agent`` (host ``fio-agent``: one ``testbed-agent run`` of a one-benchmark plan per pair)
and label ``bare fio`` (host ``fio-bare``: the same job file and environment, run by ``fio``
directly and read by the agent's own parser, ``testbed-agent parse fio``). Both arms read one and
the same test file: the agent creates, marks and lays it out in a warm-up run that is not counted,
and every later agent run finds it laid out, as it finds its file on a second execution. Arms on
files of their own compare file placements as well as the agent: ext4 spreads new directories and
the files in them over its block groups (the Orlov allocator), so two files land in different
parts of the disk, and on a virtual disk in parts the host may or may not hold in its cache.
Measured on a RAM-backed ext4 (2026-11-29, bench/agent_overhead.py, under load 2-5): with a file
per arm the agent arm read 5.2 % faster [1.5, 9.0] over 30 pairs, and two bare arms in differently
named directories 6.6 % apart over 10 pairs; with the one shared file, 1.9 % [-2.0, +6.0] over 30
pairs. Within each pair the order of the two arms is drawn from a generator seeded afresh on every
run (``--seed N`` reproduces an order; the seed is in every record's ``params.order_seed``), so
drift and warm-up hit both arms alike and no order is fixed in advance. Each arm's records go to
``OUT/<host>.jsonl``, made by ``testbed_shared.records`` (repetition = pair index, ``block`` =
``pair-N``: the report analyses the two arms pair by pair), with the machine's fingerprint in
``OUT/<host>.sysinfo.json``; the report then compares the labels (``testbed-report build OUT
--compare 'fio via agent:bare fio'``) and says which arm is faster, with both values.

    python bench/agent_vs_bare.py --out results/RUN [--pairs 5] [--job fio_4k_randread] [--seed N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Progress

from testbed_agent.workloads import primary_metrics
from testbed_shared import records, units

ROOT = Path(__file__).resolve().parent.parent
AGENT_LABEL, BARE_LABEL = "fio via agent", "bare fio"
AGENT_HOST, BARE_HOST = "fio-agent", "fio-bare"
COMPARE = f"{AGENT_LABEL}:{BARE_LABEL}"


@dataclass
class Arms:
    """What both arms run: the job, its parameters and where the bare arm's file lives."""

    job: str = "fio_4k_randread"
    size: str = "64M"
    runtime_s: int = 2
    ramp_s: int = 1
    ioengine: str = "libaio"
    iodepth: int = 16
    run_id: str = "pairs"
    metric: str = ""  # the metric the bench decides on (default: the job's bandwidth)
    #: extra fio options of the bare arm only (a known slowdown, e.g. --rate=1g, for the check that
    #: the comparison can come out either way: tests/test_quick_compare.py)
    bare_extra: list[str] = field(default_factory=list)
    agent: list[float] = field(default_factory=list)
    bare: list[float] = field(default_factory=list)
    agent_cpu: list[float] = field(default_factory=list)  # the agent's own CPU % during each agent arm

    def params(self) -> dict:
        """The fio parameters both arms run with (the agent's plan adds the shared file's name)."""
        return {
            "size": self.size,
            "runtime_s": self.runtime_s,
            "ramp_s": self.ramp_s,
            "ioengine": self.ioengine,
            "iodepth": self.iodepth,
        }

    def plan(self, target: Path) -> dict:
        """The agent's one-benchmark plan, reading ``target`` (the file both arms share)."""
        return {
            "name": "agent-vs-bare",
            "benchmarks": [
                {"name": self.job, "type": "fio", "params": self.params() | {"filename": str(target)}}
            ],
        }

    @property
    def direction(self) -> str:
        return "write" if "write" in self.job else "read"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _append(path: Path, record: dict) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _agent(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testbed_agent", *args], capture_output=True, text=True, check=False, **kw
    )


class Pairs:
    """Runs the pairs and writes both arms' records into ``out``."""

    def __init__(self, out: Path, arms: Arms, work: Path, seed: int) -> None:
        self.out, self.arms, self.work = out, arms, work
        self.seed = seed
        self.rng = random.Random(seed)  # the arms' order, not a secret
        #: the one test file both arms read, made and laid out by the agent's warm-up run
        self.target = work / "shared" / "testfile.dat"
        self.plan_path = work / "agent-vs-bare.yml"
        self.plan_path.write_text(json.dumps(arms.plan(self.target), indent=1) + "\n")
        self.sha = hashlib.sha256(self.plan_path.read_bytes()).hexdigest()
        self.index = 0
        out.mkdir(parents=True, exist_ok=True)
        for host in (AGENT_HOST, BARE_HOST):
            for suffix in (".jsonl", ".sysinfo.json"):
                (out / f"{host}{suffix}").unlink(missing_ok=True)  # a rerun of the same run id starts over
        info = _agent("sysinfo")
        if info.returncode != 0:
            raise SystemExit(f"agent-vs-bare: testbed-agent sysinfo failed: {info.stderr.strip()[-300:]}")
        for host in (AGENT_HOST, BARE_HOST):
            (out / f"{host}.sysinfo.json").write_text(info.stdout)
        self.warm_up()

    def warm_up(self) -> None:
        """One agent run, not counted: the agent creates, marks and lays out the shared file (and
        fio, the agent and the file system are warm before the first pair)."""
        self.target.parent.mkdir()
        self._agent_run(self.work / "warm-up")
        shutil.rmtree(self.work / "warm-up", ignore_errors=True)

    def metric(self, rec: dict) -> float:
        name = self.arms.metric or f"{self.arms.direction}_bw_bytes"
        return float(rec["metrics"][name]["value"])

    def _agent_run(self, run: Path) -> dict:
        """One ``testbed-agent run`` of the plan into ``run``; its fio record."""
        res = _agent(
            "run",
            str(self.plan_path),
            "--out",
            str(run),
            "--run-id",
            self.arms.run_id,
            "--host",
            AGENT_HOST,
            "--label",
            AGENT_LABEL,
            "--scratch",
            str(run.with_name(run.name + "-scratch")),  # the agent's own, removed by it at the end
            "--node-exporter",
            "",
            "--no-progress",
        )
        path = run / f"{AGENT_HOST}.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        recs = [json.loads(x) for x in lines if x.strip()]
        ok = [r for r in recs if r.get("type") == "fio" and r.get("status") == "ok"]
        if res.returncode != 0 or not ok:
            raise SystemExit(
                f"agent-vs-bare: the agent arm failed (exit {res.returncode}): {res.stderr.strip()[-400:]}"
            )
        return ok[-1]

    def agent_arm(self) -> dict:
        run = self.work / f"agent-{self.index}"
        rec = self._agent_run(run)
        rec["repetition"] = self.index  # one agent run per pair: the pair index is the repetition
        rec[records.BLOCK_FIELD] = self.block
        rec["params"] = {**rec.get("params", {}), "order_seed": self.seed}
        rec.pop("artifacts", None)
        shutil.rmtree(run, ignore_errors=True)
        return records.validate(rec, str(run / f"{AGENT_HOST}.jsonl"), None)

    @property
    def block(self) -> str:
        """The block of the current pair (records.BLOCK_FIELD): both arms carry it."""
        return f"pair-{self.index}"

    def bare_arm(self) -> dict:
        """fio run directly on the file the agent arm reads, in a session of its own like every
        tool the agent runs (``RunContext.exec``): under the kernel's autogroup scheduling a session
        is a CPU group of its own, so sharing the caller's session would give the bare arm less CPU
        than the agent's fio whenever the caller's session is busy."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "FIO_FILENAME": str(self.target),
            "FIO_SIZE": str(units.parse_size(self.arms.size)),
            "FIO_IOENGINE": self.arms.ioengine,
            "FIO_IODEPTH": str(self.arms.iodepth),
            "FIO_RUNTIME": str(self.arms.runtime_s),
            "FIO_RAMP": str(self.arms.ramp_s),
        }
        job = ROOT / "workloads" / "fio" / f"{self.arms.job}.fio"
        raw = self.work / f"bare-{self.index}.json"
        started = _now()
        subprocess.run(
            ["fio", "--output-format=json", f"--output={raw}", *self.arms.bare_extra, str(job)],
            env=env,
            cwd=self.work,
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        ended = _now()
        parsed = _agent("parse", "fio", str(raw))
        if parsed.returncode != 0:
            raise SystemExit(f"agent-vs-bare: testbed-agent parse fio failed: {parsed.stderr.strip()[-300:]}")
        doc = json.loads(parsed.stdout)
        raw.unlink(missing_ok=True)
        params = self.arms.params() | {"order_seed": self.seed}
        rec = records.make(
            run_id=self.arms.run_id,
            host=BARE_HOST,
            label=BARE_LABEL,
            plan_sha256=self.sha,
            plan="agent-vs-bare",
            benchmark=self.arms.job,
            btype="fio",
            index=0,
            params=params | ({"fio_extra": self.arms.bare_extra} if self.arms.bare_extra else {}),
            repetition=self.index,
            block=self.block,
            started_at=started,
            ended_at=ended,
            status="ok",
            metrics=doc["metrics"],
            primary=primary_metrics("fio", doc["metrics"]),
            samples=doc.get("samples", {}),
            tool=doc.get("tool", {"name": "fio"}),
        )
        return records.validate(rec, "bare fio", None)

    def pair(self) -> tuple[float, float]:
        """One pair, arms in a seeded random order; returns (agent, bare) values of the metric."""
        order = ["agent", "bare"]
        self.rng.shuffle(order)
        got = {}
        for arm in order:
            rec = self.agent_arm() if arm == "agent" else self.bare_arm()
            _append(self.out / f"{AGENT_HOST if arm == 'agent' else BARE_HOST}.jsonl", rec)
            got[arm] = self.metric(rec)
            if arm == "agent":
                tel = rec.get("telemetry") or {}
                self.arms.agent_cpu.append(float(tel.get("agent_cpu_percent", "nan")))
        self.index += 1
        self.arms.agent.append(got["agent"])
        self.arms.bare.append(got["bare"])
        return got["agent"], got["bare"]


def new_seed() -> int:
    """A fresh seed of the arms' order (drawn from the system's entropy on every run)."""
    return secrets.randbelow(2**31)


def run_pairs(
    out: Path,
    arms: Arms,
    pairs: int,
    seed: int | None = None,
    stop: Callable[[Arms], bool] | None = None,
    work: Path = Path("/var/tmp"),
) -> Arms:
    """Up to ``pairs`` alternating pairs into ``out`` (fewer when ``stop(arms)`` says so after a
    pair), the arms' order drawn from ``seed`` (a fresh one when None), both arms' test files and
    the agent's scratch beneath ``work``; progress with an estimate on stdout."""
    seed = new_seed() if seed is None else seed
    with tempfile.TemporaryDirectory(dir=work, prefix="agent-vs-bare-") as tmp:
        runner = Pairs(out, arms, Path(tmp), seed)
        prog = Progress(f"agent vs bare {arms.job} ({arms.ioengine})", pairs)
        for _ in range(pairs):
            a, b = runner.pair()
            prog.step(f"agent {a / 1e6:,.1f} MB/s, bare {b / 1e6:,.1f} MB/s")
            if stop is not None and stop(arms):
                break
    return arms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="results directory (results/RUN_ID)")
    ap.add_argument("--run-id", help="run id in the records (default: the name of --out)")
    ap.add_argument("--pairs", type=int, default=5, help="alternating pairs (default 5)")
    ap.add_argument(
        "--job", default="fio_4k_randread", help="fio job of workloads/fio (default fio_4k_randread)"
    )
    ap.add_argument("--size", default="64M", help="test file size (default 64M)")
    ap.add_argument("--runtime", type=int, default=2, help="seconds per fio run (default 2)")
    ap.add_argument("--ioengine", default="libaio", help="fio ioengine (default libaio; null: CPU-bound)")
    ap.add_argument(
        "--seed",
        type=int,
        help="seed of the arms' order within pairs (default: a new one every run, printed and kept in "
        "the records' params.order_seed; give it to reproduce an order)",
    )
    ap.add_argument(
        "--bare-fio-arg",
        action="append",
        default=[],
        metavar="OPTION",
        help="extra fio option of the bare arm only, e.g. --bare-fio-arg=--rate=1g (a known slowdown)",
    )
    args = ap.parse_args(argv)
    if args.pairs < 2:
        ap.error("--pairs: at least 2 (an interval needs two pairs)")
    if not (ROOT / "workloads" / "fio" / f"{args.job}.fio").is_file():
        ap.error(f"--job {args.job}: no workloads/fio/{args.job}.fio")
    arms = Arms(
        job=args.job,
        size=args.size,
        runtime_s=args.runtime,
        ioengine=args.ioengine,
        run_id=args.run_id or args.out.name,
        bare_extra=args.bare_fio_arg,
    )
    start = time.monotonic()
    seed = new_seed() if args.seed is None else args.seed
    print(
        f"agent vs bare fio: {args.pairs} pairs of {args.job} ({args.runtime} s each arm) into {args.out}; "
        f"arm order seed {seed} (--seed {seed} reproduces it)",
        flush=True,
    )
    run_pairs(args.out, arms, args.pairs, seed)
    print(f"agent vs bare fio: done in {time.monotonic() - start:.0f} s; compare with --compare '{COMPARE}'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
