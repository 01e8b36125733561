"""One benchmark entry of a parsed plan (:class:`Benchmark`), as workloads and the runner see it.

It lives apart from the plan parser so that the parser can use the workload registry while the
workloads use this type: the import graph stays a tree (plan -> workloads -> benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from testbed_agent.adaptive import Adaptive

DEFAULT_WAIT_S = 0.0
DEFAULT_REPETITIONS = 1


@dataclass(frozen=True)
class Benchmark:
    """One plan entry: run ``repetitions`` times, ``wait_s`` seconds before each run.

    ``params`` is the mapping as the plan wrote it (what records keep); the workload type's
    ``parse`` turns it into its typed params dataclass.
    """

    name: str
    type: str
    index: int
    line: int
    datasets: tuple[str, ...] = ()
    wait_s: float = DEFAULT_WAIT_S
    repetitions: int = DEFAULT_REPETITIONS
    timeout_s: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: adaptive repetitions (``repetitions`` is then their max); None: a fixed count
    adaptive: Adaptive | None = None
    #: the equivalence margin of the report's decisions in percent (the entry's or the plan
    #: defaults' ``margin_percent``; records carry it); None: the report's default
    margin_percent: float | None = None
    #: the plan's ``allow_weak_keys: true`` (a study plan that runs key sizes unsafe today)
    allow_weak_keys: bool = False

    @property
    def key(self) -> str:
        """Identity inside a plan, used to resume: position and name."""
        return f"{self.index}:{self.name}"
