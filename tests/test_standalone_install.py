"""Either side installs alone (issue 35): the controller (testbed-shared + testbed-reports wheels)
builds a report with the agent not installed, and a target (testbed-shared + testbed-agent wheels)
validates, shows and runs a plan with the report not installed.

Each side gets a fresh venv holding only its two wheels, built here from clean copies of shared/,
agent/ and reports/ and installed offline (``--no-index --no-deps``). Third-party libraries come
from the project's .venv through a directory of links to its site-packages without anything of
the toolkit's own (no ``testbed_*`` package, metadata or editable finder), so the other side can
be neither imported nor found by ``importlib.metadata``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIDES = {"controller": ("shared", "reports"), "target": ("shared", "agent")}


def _run(cmd: list[str], timeout: float = 300, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, **kw)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three wheels, each built from a clean copy of its directory (no build/, tests or egg-info)."""
    base = tmp_path_factory.mktemp("wheels")
    out: dict[str, Path] = {}
    for dist in ("shared", "agent", "reports"):
        src = base / "src" / dist
        src.mkdir(parents=True)
        tar = f"tar -C {ROOT / dist} --exclude=./build --exclude='*.egg-info' --exclude=__pycache__ "
        tar += f"--exclude=./tests -cf - . | tar -C {src} -xf -"
        assert _run(["bash", "-c", tar]).returncode == 0
        res = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(base / "dist"), str(src)])  # fmt: skip
        assert res.returncode == 0, res.stderr
        out[dist] = next((base / "dist").glob(f"testbed_{dist}-*.whl"))
    return out


@pytest.fixture(scope="module")
def third_party(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Links to everything in the project venv's site-packages but the toolkit's own entries."""
    site = Path(sysconfig.get_paths()["purelib"])
    view = tmp_path_factory.mktemp("third-party")
    for entry in site.iterdir():
        if entry.name.startswith(("testbed", "__editable__")) or entry.suffix == ".pth":
            continue
        (view / entry.name).symlink_to(entry)
    return view


def _venv(where: Path, wheels: list[Path], third_party: Path) -> Path:
    """A venv holding ``wheels`` only (installed offline), then the third-party view on its path."""
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(where)]).returncode == 0
    python = where / "bin" / "python"
    res = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                "--no-index", *map(str, wheels)])  # fmt: skip
    assert res.returncode == 0, res.stderr
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    (Path(purelib.stdout.strip()) / "zz-third-party.pth").write_text(f"{third_party}\n")
    return where / "bin"


def _env(bindir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bindir}:/usr/local/bin:/usr/bin:/bin"
    env["TESTBED_WORKLOADS_DIR"] = str(ROOT / "workloads")
    env["TESTBED_NOTEBOOKS_DIR"] = str(ROOT / "kaggle_notebooks")
    return env


def _absent(bindir: Path, package: str, dist: str) -> None:
    probe = (
        "import importlib.metadata as m, importlib.util as u, sys\n"
        f"assert u.find_spec({package!r}) is None, 'importable'\n"
        f"try:\n    m.version({dist!r})\nexcept m.PackageNotFoundError:\n    sys.exit(0)\nsys.exit('found')\n"
    )
    res = _run([str(bindir / "python"), "-c", probe], env=_env(bindir))
    assert res.returncode == 0, f"{package} is there: {res.stderr}"


@pytest.mark.slow
def test_the_report_builds_without_the_agent(
    wheels: dict[str, Path], third_party: Path, tmp_path: Path
) -> None:
    bindir = _venv(tmp_path / "venv", [wheels[d] for d in SIDES["controller"]], third_party)
    _absent(bindir, "testbed_agent", "testbed-agent")
    _absent(bindir, "testbed_services", "testbed-agent")
    out = tmp_path / "report"
    store = ROOT / "reports" / "tests" / "data" / "quick-run"
    res = _run(
        [str(bindir / "testbed-report"), "build", str(store), "--out", str(out)],
        env=_env(bindir),
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert "index.html" in res.stdout
    html = (out / "index.html").read_text()
    assert "fio_4k_randread" in html and "Primary metric" in html
    where = _run([str(bindir / "python"), "-c", "import testbed_reports; print(testbed_reports.__file__)"],
                 env=_env(bindir))  # fmt: skip
    assert str(tmp_path / "venv") in where.stdout, "the report came from the wheel, not the checkout"


@pytest.mark.slow
def test_the_agent_runs_without_the_report(
    wheels: dict[str, Path], third_party: Path, tmp_path: Path
) -> None:
    bindir = _venv(tmp_path / "venv", [wheels[d] for d in SIDES["target"]], third_party)
    _absent(bindir, "testbed_reports", "testbed-reports")
    env = _env(bindir)
    agent = str(bindir / "testbed-agent")
    quick = str(ROOT / "workloads" / "plans" / "quick.yml")
    res = _run([agent, "validate", quick], env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = _run([agent, "plan", "show", quick, "--json"], env=env, cwd=tmp_path)
    assert res.returncode == 0 and '"fio_4k_randread"' in res.stdout, res.stderr
    plan = tmp_path / "plan.yml"
    plan.write_text(
        "benchmarks:\n  - {name: systeminfo, type: sysinfo}\n"
        "  - {name: dd_tiny, type: dd, params: {bs: 4k, count: 16, source: zero, pause_s: 0}}\n"
    )
    out = tmp_path / "results" / "r1"
    res = _run([agent, "run", str(plan), "--out", str(out), "--host", "h1", "--node-exporter", "",
                "--no-progress", "--scratch", str(tmp_path / "scratch")], env=env, cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = (out / "h1.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all('"status": "ok"' in line and '"primary": ' in line for line in lines)
