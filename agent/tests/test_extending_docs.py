"""docs/extending.md stays true: its worked example (a workload type as one file, plus its tests)
is installed into a temporary copy of the workloads package and its tests run."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed_agent import workloads

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def _blocks() -> dict[str, str]:
    """The python blocks of the worked example, by the file the text before each names."""
    text = DOC.read_text().split("## Adding a workload type", 1)[1].split("\n## ", 1)[0]
    out = {}
    for m in re.finditer(r"`(agent/[\w/]+\.py)`[^`]*?:\n\n```python\n(.*?)```", text, re.S):
        out[m.group(1)] = m.group(2)
    return out


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """The doc's workload module in the package (through a second package directory), and the
    doc's test module loaded."""
    blocks = _blocks()
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "checksum.py").write_text(blocks["agent/testbed_agent/workloads/checksum.py"])
    monkeypatch.setattr(workloads, "__path__", [*workloads.__path__, str(overlay)])
    workloads.PLUGINS.forget()
    test_file = tmp_path / "test_workload_checksum.py"
    test_file.write_text(blocks["agent/tests/test_workload_checksum.py"])
    spec = importlib.util.spec_from_file_location("doc_test_workload_checksum", test_file)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    workloads.PLUGINS.forget()


def test_the_doc_shows_both_files() -> None:
    assert set(_blocks()) == {
        "agent/testbed_agent/workloads/checksum.py",
        "agent/tests/test_workload_checksum.py",
    }


def test_the_worked_example_is_one_file_that_works(example: object, tmp_path: Path) -> None:
    assert "checksum" in workloads.registry()
    for name in dir(example):
        if name.startswith("test_"):
            func = getattr(example, name)
            args = {"tmp_path": tmp_path / name} if "tmp_path" in func.__code__.co_varnames else {}
            for path in args.values():
                path.mkdir()
            func(**args)
