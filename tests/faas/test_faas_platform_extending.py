"""docs/extending.md "Adding a FaaS platform" stays true: its platform module is added to the
platforms package (through a second package directory), its stand-in loaded, and its test run as
written."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from testbed_agent.faas_drivers import platforms

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
FILES = {
    "module": "agent/testbed_agent/faas_drivers/platforms/openwhisk.py",
    "standin": "tests/faas/openwhisk_standin.py",
    "test": "tests/faas/test_faas_openwhisk.py",
}


def _blocks() -> dict[str, str]:
    """The python blocks of the section, by the file the text before each names."""
    section = DOC.read_text().split("## Adding a FaaS platform", 1)[1].split("\n## ", 1)[0]
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"`([\w/]+\.py)`[^`]*?:\n\n```python\n(.*?)```", section, re.S)
    }


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The doc's platform among the platforms, its stand-in importable as the doc's test imports
    it; yields the doc's test module."""
    blocks = _blocks()
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "openwhisk.py").write_text(blocks[FILES["module"]])
    monkeypatch.setattr(platforms, "__path__", [*platforms.__path__, str(overlay)])
    platforms.PLUGINS.forget()
    (tmp_path / "openwhisk_standin.py").write_text(blocks[FILES["standin"]])
    monkeypatch.setitem(sys.modules, "faas.openwhisk_standin", None)
    standin = _load("faas.openwhisk_standin", tmp_path / "openwhisk_standin.py")
    (tmp_path / "test_doc_openwhisk.py").write_text(blocks[FILES["test"]])
    yield _load("doc_test_faas_openwhisk", tmp_path / "test_doc_openwhisk.py")
    sys.modules.pop("doc_test_faas_openwhisk", None)
    del standin
    platforms.PLUGINS.forget()


def test_the_doc_shows_the_three_files() -> None:
    assert set(_blocks()) == set(FILES.values())


def test_the_worked_example_is_one_file_and_its_standin(
    example: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "openwhisk" in platforms.names() and platforms.get("openwhisk").real
    tests = [getattr(example, n) for n in dir(example) if n.startswith("test_")]
    assert tests
    for test in tests:
        work = tmp_path / test.__name__
        work.mkdir()
        test(work, monkeypatch, capsys)
