"""Issue 26 finding 11 (plans): the 1 MiB cap is on bytes, before anything is parsed, for both plan
forms; a YAML plan's value count is checked before it is composed (a 1 MiB flat list cost 20 s and
387 MB before its refusal); the loader's bookkeeping key ``__line__`` in a plan is refused, not
silently dropped."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from testbed_agent.plan import MAX_PLAN_BYTES, PlanError, load_plan


def _refused(path: Path | str, match: str) -> None:
    with pytest.raises(PlanError, match=match):
        load_plan(path)


def test_a_flat_list_under_the_byte_cap_is_refused_without_composing_it(tmp_path: Path) -> None:
    n = (MAX_PLAN_BYTES - 64) // 2
    plan = tmp_path / "flat.yml"
    plan.write_text("name: x\nbenchmarks: [" + ",".join(["1"] * n) + "]\n")
    assert plan.stat().st_size <= MAX_PLAN_BYTES
    tracemalloc.start()
    try:
        _refused(plan, r"flat\.yml:2: YAML refused: more than 100000 values")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak / 1e6:.0f} MB held while refusing"  # was 387 MB


@pytest.mark.parametrize("form", ["plan.txt", "plan.yml"])
def test_the_byte_cap_holds_for_both_forms_before_parsing(tmp_path: Path, form: str) -> None:
    plan = tmp_path / form
    plan.write_text("dd_x\n" * (MAX_PLAN_BYTES // 5 + 10))
    _refused(plan, "plan larger than 1048576 bytes")


def test_an_endless_plan_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    _refused("/dev/zero", "plan larger than")
    fifo = tmp_path / "plan.txt"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # a writer that never stops
        try:
            with open(fifo, "wb") as fh:
                while True:
                    fh.write(b"dd_x\n" * 4096)
        finally:
            os._exit(0)
    try:
        _refused(fifo, "plan larger than")
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


@pytest.mark.parametrize("key", ["__line__", "__keylines__"])
def test_reserved_loader_keys_are_refused_with_their_line(tmp_path: Path, key: str) -> None:
    plan = tmp_path / "p.yml"
    plan.write_text(f"benchmarks:\n  - name: dd_a\n    type: dd\n    params: {{{key}: 5, bs: 4k}}\n")
    _refused(plan, rf"p\.yml:4: YAML refused: '{key}' is a reserved key")
