"""Red team, file-system races (issue 26 finding 6): an attacker process swaps the agent's test file
for a symbolic link to a foreign file, and the scratch directory for a link to a foreign
directory, over and over, while the agent opens its target and writes through what it opened.

Counted: swaps made, agent attempts, writes done, clean refusals (``TargetRefused``), foreign writes
(the victim file changed, or anything appeared in the foreign directory), tracebacks.

``python agent/tests/fsrace.py SWAPS`` runs a larger loop and prints the counts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from testbed_agent import scratch
from testbed_agent.guard import OpenTarget, open_target
from testbed_shared.errors import TestbedError

VICTIM = b"precious, not the agent's\n" * 256

#: the attacker: a separate process (true concurrency), swapping by rename so each state is whole
ATTACKER = textwrap.dedent(
    """
    import os, sys, time, random
    scr, victim, foreign, swaps, rel = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    rng = random.Random(26)
    parked = scr + ".parked"
    link = scr + ".link"
    target = os.path.join(scr, rel)
    done = 0
    while done < swaps:
        try:
            if done % 2 == 0:  # the test file becomes a link to the victim, for a moment
                tmp = target + ".evil"
                try:
                    os.symlink(victim, tmp)
                    os.replace(tmp, target)
                    time.sleep(rng.random() / 2000)
                    os.unlink(target)
                except FileNotFoundError:
                    pass
            else:  # the scratch directory becomes a link to the foreign directory, then comes back
                os.symlink(foreign, link)
                os.rename(scr, parked)
                os.replace(link, scr)
                time.sleep(rng.random() / 2000)
                os.unlink(scr)
                os.rename(parked, scr)
        except OSError:
            pass
        done += 1
        time.sleep(rng.random() / 5000)
    print(done)
    """
)


@dataclass
class RaceResult:
    swaps: int = 0
    attempts: int = 0
    writes: int = 0
    refusals: int = 0
    tool_runs: int = 0
    foreign_writes: int = 0
    tracebacks: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.swaps} swaps, {self.attempts} attempts: {self.writes} writes "
            f"({self.tool_runs} by the tool), "
            f"{self.refusals} clean refusals, {self.foreign_writes} foreign writes, "
            f"{len(self.tracebacks)} tracebacks"
        )


def _write_in_process(t: OpenTarget) -> None:
    """What a tool does with the path it is given: open it and write."""
    with open(t.proc_path, "r+b") as fh:
        fh.write(b"\0" * 4096)


def _write_with_dd(t: OpenTarget) -> None:
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={t.proc_path}", "bs=4k", "count=1", "conv=notrunc"],
        pass_fds=(t.fd,),
        capture_output=True,
        check=True,
        timeout=30,
    )


def run(
    swaps: int,
    work: Path,
    dd_every: int = 25,
    step: Callable[[Path], None] | None = None,
    target_rel: str = "dd/testfile.dat",
) -> RaceResult:
    """``swaps`` attacker swaps against an agent opening ``<scratch>/dd/testfile.dat`` and writing
    (or, with ``step``, against ``step(scratch)``: e.g. a whole dd or fio benchmark run)."""
    res = RaceResult()
    victim, foreign = work / "victim.db", work / "foreign"
    victim.write_bytes(VICTIM)
    foreign.mkdir()
    scr = scratch.prepare(work / "scratch", work / "results")
    held = scratch.lock(scr)
    target = scr / target_rel
    attacker = subprocess.Popen(
        [sys.executable, "-c", ATTACKER, str(scr), str(victim), str(foreign), str(swaps), target_rel],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        while attacker.poll() is None or res.attempts < 10:
            res.attempts += 1
            try:
                if step is not None:
                    step(scr)
                    res.tool_runs += 1
                else:
                    with open_target(target) as t:
                        if res.attempts % dd_every == 0:
                            _write_with_dd(t)
                            res.tool_runs += 1
                        else:
                            _write_in_process(t)
                res.writes += 1
            except TestbedError:
                res.refusals += 1
            except Exception:  # noqa: BLE001 - the harness counts what must not happen
                res.tracebacks.append(traceback.format_exc(limit=4))
        out, _ = attacker.communicate(timeout=60)
        res.swaps = int(out.strip() or 0)
    finally:
        if attacker.poll() is None:
            attacker.kill()
            attacker.wait()
        held.close()
        time.sleep(0)
    res.foreign_writes = int(victim.read_bytes() != VICTIM) + len(list(foreign.iterdir()))
    return res


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    tmp = Path(tempfile.mkdtemp(prefix="fsrace-"))
    try:
        r = run(n, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(r.summary())
    for tb in r.tracebacks[:5]:
        print(tb)
    sys.exit(1 if r.foreign_writes or r.tracebacks else 0)


#: the attacker of the toolkit's output files: the output directory becomes a link and comes back
OUT_ATTACKER = textwrap.dedent(
    """
    import os, sys, time, random
    out, foreign, swaps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(27)
    for _ in range(swaps):
        try:
            os.symlink(foreign, out + ".link")
            os.rename(out, out + ".parked")
            os.replace(out + ".link", out)
            time.sleep(rng.random() / 2000)
            os.unlink(out)
            os.rename(out + ".parked", out)
        except OSError:
            pass
        time.sleep(rng.random() / 5000)
    print(swaps)
    """
)


def run_outputs(swaps: int, work: Path) -> RaceResult:
    """``swaps`` swaps of an output directory for a link to a foreign one while the toolkit writes
    report files into it with ``write_atomically``."""
    from testbed_shared.atomic import write_atomically

    res = RaceResult()
    out, foreign = work / "report", work / "foreign"
    out.mkdir()
    foreign.mkdir()
    attacker = subprocess.Popen(
        [sys.executable, "-c", OUT_ATTACKER, str(out), str(foreign), str(swaps)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        while attacker.poll() is None or res.attempts < 10:
            res.attempts += 1
            try:
                write_atomically(out / "index.html", f"<p>{res.attempts}</p>\n", what="report")
                res.writes += 1
            except TestbedError:
                res.refusals += 1
            except Exception:  # noqa: BLE001 - the harness counts what must not happen
                res.tracebacks.append(traceback.format_exc(limit=4))
        out_text, _ = attacker.communicate(timeout=60)
        res.swaps = int(out_text.strip() or 0)
    finally:
        if attacker.poll() is None:
            attacker.kill()
            attacker.wait()
    res.foreign_writes = len(list(foreign.iterdir()))
    return res


#: the attacker of a plan's ``filename`` outside the scratch directory (issue 40 finding 5): the
#: target's directory becomes a link to a foreign directory and comes back
DIR_ATTACKER = textwrap.dedent(
    """
    import os, shutil, sys, time, random
    d, foreign = sys.argv[1], sys.argv[2]
    swaps, seed, pause = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    rng = random.Random(seed)
    link, parked, placed = d + ".link", d + ".parked", 0
    for _ in range(swaps):
        try:
            os.symlink(foreign, link)
            os.rename(d, parked)
            os.replace(link, d)  # fails when the agent made a new directory meanwhile
            placed += 1
            time.sleep(rng.random() * pause)
        except OSError:
            pass
        # back to the real directory, whatever happened above; the agent may be writing into a
        # directory it created meanwhile, so removing that one is tried until it holds
        for _ in range(1000):
            try:
                if os.path.islink(d):
                    os.unlink(d)
                if os.path.lexists(link):
                    os.unlink(link)
                if os.path.isdir(parked):
                    if os.path.isdir(d):
                        shutil.rmtree(d)  # a directory the agent created while the real one was parked
                    os.rename(parked, d)
                break
            except OSError:
                time.sleep(0.001)
        time.sleep(rng.random() * pause)
    print(placed)
    """
)


def run_filename(
    swaps: int, work: Path, step: Callable[[Path], object], seed: int = 40, pause: float = 0.01
) -> RaceResult:
    """``swaps`` seeded swaps of ``work/data/sub`` (a plan's target directory, outside any scratch)
    for a link to ``work/foreign`` (each state held up to ``pause`` s) while
    ``step(work/data/sub/testfile.dat)`` runs a benchmark on it, again and again.
    ``foreign_writes`` counts the runs after which the foreign directory held anything (it is
    emptied after each, so each run counts alone); ``swaps`` is how often the link was in place."""
    res = RaceResult()
    sub, foreign = work / "data" / "sub", work / "foreign"
    sub.mkdir(parents=True)
    foreign.mkdir()
    attacker = subprocess.Popen(
        [sys.executable, "-c", DIR_ATTACKER, str(sub), str(foreign), str(swaps), str(seed), str(pause)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        while attacker.poll() is None or res.attempts < 10:
            res.attempts += 1
            try:
                step(sub / "testfile.dat")
                res.writes += 1
                res.tool_runs += 1
            except TestbedError:
                res.refusals += 1
            except Exception:  # noqa: BLE001 - the harness counts what must not happen
                res.tracebacks.append(traceback.format_exc(limit=4))
            if any(foreign.iterdir()):
                res.foreign_writes += 1
                for p in foreign.iterdir():
                    shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        out, _ = attacker.communicate(timeout=60)
        res.swaps = int(out.strip() or 0)
    finally:
        if attacker.poll() is None:
            attacker.kill()
            attacker.wait()
    return res
