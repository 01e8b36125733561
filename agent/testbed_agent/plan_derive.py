"""Derived plans: a plan with overrides, written out as a YAML plan of its own.

A published plan stays as written; a shorter or smaller rerun of it (a dress rehearsal, a smoke
run before paying for machines) is a *derived* plan: the same benchmarks, names and data sets,
with some fields or parameters overridden, like PerfKit Benchmarker's ``--config_override``.
Each override is ``[TYPE.]KEY=VALUE``:

* ``KEY`` is ``wait_s``, ``repetitions``, ``timeout_s`` or ``margin_percent`` (the benchmark's
  own fields) or a
  parameter of the workload type (checked by its params dataclass, like a plan's ``params``);
* ``TYPE`` (a workload type or an alias: ``fio``, ``kaggle_notebook``, ``notebook``...) limits it
  to the benchmarks of that type; without it, it applies to every benchmark (fields only);
* ``VALUE`` is read as YAML: ``3``, ``quick``, ``[float, nbody]``, ``{min: 3, max: 5}``.

The derived plan is a file with its own sha256, so records, resumes and attestation bind to what
actually ran; its header names the source plan, the source's sha256 and the overrides.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed_agent import workloads
from testbed_agent.plan import (
    Benchmark,
    Plan,
    check_margin,
    check_number,
    check_params,
    check_repetitions,
    check_timeout,
    load_plan,
)
from testbed_shared.atomic import check_output_path, write_atomically
from testbed_shared.errors import PlanError

#: the benchmark fields an override may set; anything else is a workload parameter
FIELDS = ("wait_s", "repetitions", "timeout_s", "margin_percent")
MAX_OVERRIDES = 64


@dataclass(frozen=True)
class Override:
    """One ``[TYPE.]KEY=VALUE``; ``type`` None applies to every benchmark."""

    text: str
    type: str | None
    key: str
    value: Any

    @property
    def where(self) -> str:
        """How errors name this override."""
        return f"--set {self.text[:80]}"


def parse_override(text: str) -> Override:
    """Parse ``[TYPE.]KEY=VALUE``; raise :class:`PlanError` naming the override."""
    where = f"--set {text[:80]}"
    target, sep, raw = text.partition("=")
    target = target.strip()
    if not sep or not target:
        raise PlanError(
            where, None, None, "expected [TYPE.]KEY=VALUE", hint="e.g. kaggle_notebook.scale=quick"
        )
    wtype, dot, key = target.rpartition(".")
    if not key.isidentifier() or (dot and not wtype):
        raise PlanError(where, None, None, f"not a field or parameter name: {target!r}")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise PlanError(where, None, key, f"value is not YAML: {' '.join(str(exc).split())[:120]}") from None
    resolved = workloads.canonical_type(wtype.lower()) if dot else None
    if resolved is None and key not in FIELDS:
        raise PlanError(
            where,
            None,
            key,
            "a parameter needs its workload type",
            hint=f"prefix its workload type: TYPE.{key}=...",
        )
    return Override(text=text, type=resolved, key=key, value=value)


def apply_overrides(plan: Plan, overrides: list[Override]) -> list[Benchmark]:
    """The plan's benchmarks with the overrides applied in order, checked like a plan's own."""
    if len(overrides) > MAX_OVERRIDES:
        raise PlanError("--set", None, None, f"{len(overrides)} overrides, at most {MAX_OVERRIDES}")
    benches = list(plan.benchmarks)
    for o in overrides:
        hits = [i for i, b in enumerate(benches) if o.type is None or b.type == o.type]
        if not hits:
            types = ", ".join(sorted({b.type for b in benches}))
            raise PlanError(
                o.where,
                None,
                None,
                f"no benchmark of type '{o.type}' in {plan.path}",
                hint=f"this plan's types: {types}",
            )
        for i in hits:
            benches[i] = _override(benches[i], o)
        try:
            check_params([benches[i] for i in hits], plan.path)
        except PlanError as exc:
            raise PlanError(
                o.where,
                None,
                exc.field,
                f"{exc.problem} (benchmark at {plan.path}:{exc.line})",
            ) from None
    return benches


def _override(b: Benchmark, o: Override) -> Benchmark:
    if o.key == "wait_s":
        return dataclasses.replace(b, wait_s=check_number(o.value, o.where, None, o.key, b.wait_s, float))
    if o.key == "timeout_s":
        return dataclasses.replace(b, timeout_s=check_timeout(o.value, o.where, None, o.key, b.timeout_s))
    if o.key == "margin_percent":
        margin = check_margin(o.value, o.where, None, o.key, b.margin_percent)
        return dataclasses.replace(b, margin_percent=margin)
    if o.key == "repetitions":
        count, adaptive = check_repetitions(o.value, o.where, None, o.key, (b.repetitions, b.adaptive))
        return dataclasses.replace(b, repetitions=count, adaptive=adaptive)
    return dataclasses.replace(b, params={**b.params, o.key: o.value})


def derive(path: str | Path, sets: list[str]) -> tuple[Plan, str]:
    """(source plan, text of the derived YAML plan)."""
    source = load_plan(path)
    overrides = [parse_override(s) for s in sets]
    benches = apply_overrides(source, overrides)
    return source, render(source, benches, overrides)


def render(source: Plan, benches: list[Benchmark], overrides: list[Override]) -> str:
    """The derived plan as YAML, with a header naming its source and the overrides."""
    head = [
        f"# Derived from {source.path} (sha256 {source.sha256}, {source.form} form)",
        *(f"#   --set {o.text}" for o in overrides),
        "# by `testbed-agent plan derive`: run it as it is, or rerun the source as written.",
    ]
    doc = {
        "name": f"{source.name}.derived" if overrides else source.name,
        "description": f"{source.name} with {len(overrides)} override(s), source sha256 {source.sha256}",
        **({"allow_weak_keys": True} if source.allow_weak_keys else {}),
        "benchmarks": [_item(b) for b in benches],
    }
    return "\n".join(head) + "\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=False, width=110)


def _item(b: Benchmark) -> dict[str, Any]:
    item: dict[str, Any] = {"name": b.name, "type": b.type}
    if b.datasets:
        item["datasets"] = list(b.datasets)
    item["wait_s"] = b.wait_s
    item["repetitions"] = b.adaptive.as_dict() if b.adaptive else b.repetitions
    if b.timeout_s is not None:
        item["timeout_s"] = b.timeout_s
    if b.margin_percent is not None:
        item["margin_percent"] = b.margin_percent
    if b.params:
        item["params"] = b.params
    return item


def derived_plan(path: str | Path, sets: list[str]) -> Plan:
    """The derived plan, loaded from a temporary file like any plan (for ``plan show --set``)."""
    _, text = derive(path, sets)
    return _loaded(text, f"{Path(path).stem}.derived.yml")


def _loaded(text: str, name: str) -> Plan:
    """``text`` read back as the plan file ``name`` would be (from a temporary copy)."""
    with tempfile.TemporaryDirectory(prefix="testbed-derive-") as tmp:
        out = Path(tmp) / name
        out.write_text(text)
        return load_plan(out)


def _cmd_derive(args: argparse.Namespace) -> int:
    source, text = derive(args.plan, args.set)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    check_output_path(args.out, "derived plan", make_parents=True, dry=True)  # nothing made yet
    if Path(args.out).suffix not in (".yml", ".yaml"):
        raise PlanError(
            f"-o {args.out}",
            None,
            None,
            "a derived plan is YAML: its file name ends in .yml or .yaml (a plan named otherwise is "
            "read as the classic text form)",
            hint=f"e.g. -o {Path(args.out).with_suffix('.yml').name}",
        )
    derived = _loaded(text, Path(args.out).name)  # the plan as it will be read back
    out = check_output_path(args.out, "derived plan", make_parents=True)
    write_atomically(out, text, what="derived plan")
    print(
        f"{out}: {derived.name} derived from {source.path} with {len(args.set)} override(s), "
        f"{derived.executions} executions, sha256 {derived.sha256[:12]}",
        file=sys.stderr,
    )
    return 0


def add_derive_parser(plan_sub: Any) -> None:
    """``plan derive`` (under ``plan``, registered by plan_show.add_parser)."""
    p = plan_sub.add_parser(
        "derive",
        help="write a plan with overrides ([TYPE.]KEY=VALUE) as a YAML plan of its own",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("plan", type=Path, help="source plan file (.yml/.yaml or the classic text form)")
    add_set_argument(p)
    p.add_argument(
        "--out",
        "-o",
        help="write the derived plan here: a .yml or .yaml name, a regular file or a new path "
        "(default: stdout)",
    )
    p.set_defaults(func=_cmd_derive)


def add_set_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="[TYPE.]KEY=VALUE",
        help="override a field (wait_s, repetitions, timeout_s, margin_percent) or a TYPE's parameter, e.g. "
        "kaggle_notebook.scale=quick, fio.runtime_s=5, wait_s=0 (repeatable, applied in order)",
    )
