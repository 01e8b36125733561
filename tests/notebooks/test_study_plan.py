"""The S2 study as published (issue 25): its classic plan entry for entry against the fidelity
manifest (the paper's plan, S2 L321-372, with the data sets of the study's code), the names
resolving to our notebooks and generators, the pack's fio jobs doing what the study's fio command
did, real data read when placed, and ``plan show`` printing the study's machines (S2 L195-261,
Table 1 S2 L520-528), each notebook's data set and the deviations."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbhelpers import NOTEBOOKS, ROOT, STUDY_PLAN, Runner, code_outputs, write_notebook

from testbed_agent.plan import ParamError, load_plan, resolve_type
from testbed_agent.workloads.fio import Fio, job_file
from testbed_agent.workloads.notebook import locate
from testbed_agent.workloads.notebook.aliases import aliases, dataset_generator, notebook_alias
from testbed_shared.studies import manifest

S2 = manifest("S2")
#: the published plan's entries, as the manifest transcribes them (S2 L326-370 + the study's code)
PUBLISHED = [e.value for e in S2.elements if e.id.startswith("plan.") and e.id[5:].isdigit()]
#: the study's notebooks and the Kaggle data sets its code downloads for each (S2 L348-368)
STUDY_NOTEBOOKS = {e["name"]: tuple(e["datasets"]) for e in PUBLISHED if e["type"] == "kaggle_notebook"}
#: the study's machines (S2 L199-261, Table 1 S2 L520-528): 2 vCPU / 8 GiB, 50 GB Standard SSD
STUDY_MACHINES = """
host                label              groups          size               vcpus memory disk            disk_gb security       encryption
study-amd-base-1    AMD-Non-SEV        amd_baseline    Standard_D2as_v5   2     8      StandardSSD_LRS 50      Standard       -
study-intel-base-1  Intel-Non-TDX      intel_baseline  Standard_D2_v5     2     8      StandardSSD_LRS 50      Standard       -
study-sev-1         SEV-Non-Encrypted  sev             Standard_DC2as_v5  2     8      StandardSSD_LRS 50      ConfidentialVM VMGuestStateOnly
study-sev-enc-1     SEV-Encrypted      sev             Standard_DC2as_v5  2     8      StandardSSD_LRS 50      ConfidentialVM DiskWithVMGuestState
study-tdx-1         TDX-Non-Encrypted  tdx             Standard_DC2es_v5  2     8      StandardSSD_LRS 50      ConfidentialVM VMGuestStateOnly
study-tdx-enc-1     TDX-Encrypted      tdx             Standard_DC2es_v5  2     8      StandardSSD_LRS 50      ConfidentialVM DiskWithVMGuestState
"""  # noqa: E501
#: the record field each column of the table is checked against
COLUMNS = {
    "host": "host",
    "label": "testbed_label",
    "groups": "groups",
    "size": "azure_vm_size",
    "vcpus": "vcpus",
    "memory": "memory_gib",
    "disk": "azure_vm_os_disk_type",
    "disk_gb": "azure_vm_os_disk_size_gb",
    "security": "azure_vm_security_type",
    "encryption": "azure_vm_security_encryption_type",
}


def _table(text: str) -> list[dict[str, str]]:
    head, *rows = [line.split() for line in text.strip().splitlines()]
    return [dict(zip(head, row, strict=True)) for row in rows]


def test_the_plan_is_the_published_one_cell_by_cell() -> None:
    """25 entries (S2 L321-372): name, type, data sets, wait and executions of each, in order."""
    plan = load_plan(STUDY_PLAN)
    assert len(PUBLISHED) == len(plan.benchmarks) == 25 == S2.element("plan.count").value
    for want, got in zip(PUBLISHED, plan.benchmarks, strict=True):
        where = f"entry {got.index + 1} ({want['name']})"
        assert got.name == want["name"], where
        assert got.type == resolve_type(want["name"], want["type"]), where
        assert got.datasets == tuple(want["datasets"]), where
        assert got.wait_s == want["wait_s"], where
        assert got.repetitions == want["executions"], where


def test_the_published_plan_has_the_paper_s_runs_and_waits() -> None:
    """What the issue checks by hand: systeminfo waits 5 s (S2 L326), SimplePrime runs 5 times at
    20 s (S2 L348), movie twice (S2 L358), energy three times (S2 L368), pyperformance default."""
    plan = {b.name: b for b in load_plan(STUDY_PLAN).benchmarks}
    assert plan["systeminfo"].wait_s == 5 and plan["systeminfo"].type == "sysinfo"
    assert (plan["SimplePrime.ipynb"].repetitions, plan["SimplePrime.ipynb"].wait_s) == (5, 20)
    assert plan["getting-started-with-a-movie-recommendation-system.ipynb"].repetitions == 2
    assert plan["energy-eda-segmentation-and-prediction.ipynb"].repetitions == 3
    assert plan["pyperformance default"].type == "pyperformance"
    assert sum(b.repetitions for b in plan.values()) == 32


def test_fio_jobs_run_the_study_s_fio_command() -> None:
    """Each fio entry's job (the pack's, S2 L374 and manage.py) as fio itself reads it: the study's
    options, fio's defaults for what the study left out (psync, depth 1, buffered)."""
    if shutil.which("fio") is None:
        pytest.skip("fio not installed")
    command = S2.element("fio.command").value
    study = dict(_options(command.split()[1:]))
    for b in load_plan(STUDY_PLAN).benchmarks:
        if b.type != "fio":
            continue
        bs, rw = b.name.split("_")[1:3]
        env = {"FIO_FILENAME": "/tmp/x", "FIO_SIZE": str(1 << 30), "FIO_RUNTIME": "60"}
        env |= {"FIO_IOENGINE": b.params["ioengine"], "FIO_IODEPTH": str(b.params["iodepth"])}
        job = str(job_file(b, Fio.parse(b)))
        shown = subprocess.run(
            ["fio", "--showcmd", job], env=env, capture_output=True, text=True, check=True
        ).stdout
        ours = dict(_options(shlex.split(shown)[1:]))
        rw_fio = {"sequentialread": "read", "sequentialwrite": "write", "randomread": "randread"}
        assert ours["rw"] == rw_fio.get(rw, "randwrite") and ours["bs"] == bs, b.name
        assert ours["size"] in ("1G", "1073741824") and study["size"] == "1G"
        for key in ("numjobs", "runtime"):
            assert ours[key] == study[key], (b.name, key)
        assert "time_based" in ours and "time_based" in study
        assert ours["ioengine"] == "psync" and ours["iodepth"] == "1" and ours.get("direct", "0") == "0"
        assert "ramp_time" not in ours and b.params["ramp_s"] == 0


def _options(argv: list[str]) -> list[tuple[str, str]]:
    out = []
    for arg in argv:
        if arg.startswith("--"):
            key, _, value = arg[2:].partition("=")
            out.append((key, value))
    return out


def test_pyperformance_runs_the_study_s_list() -> None:
    """manage.py's "default" (S2 L370): its names, sqlglot as pyperformance 1.14 calls it."""
    bench = next(b for b in load_plan(STUDY_PLAN).benchmarks if b.type == "pyperformance")
    names = bench.params["benchmarks"]
    assert len(names) == len(set(names)) == 86
    assert {"crypto_pyaes", "float", "raytrace", "regex_v8"} <= set(names)  # the paper's Figures 3-10
    assert not any(n == "sqlglot" or (n.startswith("sqlglot_") and "_v2" not in n) for n in names)


def test_study_plan_validates_with_its_original_names() -> None:
    plan = load_plan(STUDY_PLAN)
    notebooks = {b.name: b.datasets for b in plan.benchmarks if b.type == "kaggle_notebook"}
    assert notebooks == STUDY_NOTEBOOKS
    assert [b.name for b in plan.benchmarks if b.type == "fio"] == [
        f"fio_{bs}_{rw}"
        for bs in ("4k", "64k", "1m")
        for rw in ("sequentialread", "sequentialwrite", "randomread", "randomwrite")
    ]
    assert {b.type for b in plan.benchmarks} == {"sysinfo", "fio", "kaggle_notebook", "pyperformance"}


@pytest.mark.parametrize("name", sorted(n for n in STUDY_NOTEBOOKS if n != "SimplePrime.ipynb"))
def test_original_names_resolve_to_our_notebooks_and_generators(name: str) -> None:
    ours = locate(name)
    assert ours.parent == NOTEBOOKS and ours.name == notebook_alias(name)
    meta = nbformat.read(ours, as_version=4).metadata["testbed"]["datasets"]
    assert {dataset_generator(d) for d in STUDY_NOTEBOOKS[name]} == set(meta)


def test_aliases_name_existing_files() -> None:
    table = aliases()
    assert all((NOTEBOOKS / ours).is_file() for ours in table["notebooks"].values())
    assert all((NOTEBOOKS / "datasets" / f"{gen}.py").is_file() for gen in table["datasets"].values())


def test_real_data_is_used_and_recorded(nbdir, runner: Runner) -> None:
    """A data set placed under datasets/real/<generator>/ is read instead of generated."""
    shutil.copytree(
        NOTEBOOKS / "datasets", nbdir / "datasets", ignore=shutil.ignore_patterns("real", "__pycache__")
    )
    real = nbdir / "datasets" / "real" / "creditcard"
    real.mkdir(parents=True)
    (real / "creditcard.csv").write_text("Time,V1,Amount,Class\n0,1.5,9.99,0\n")
    (nbdir / "aliases.yml").write_text(
        "notebooks: {orig-reader.ipynb: reader.ipynb}\ndatasets: {mlg-ulb/creditcardfraud: creditcard}\n"
    )
    write_notebook(
        nbdir / "reader.ipynb",
        "import os\nrows = open(os.path.join(data_dir, 'creditcard.csv')).read().count(chr(10))",
        "print(sorted(os.listdir(data_dir)), rows)",
    )
    out, ctx = runner.run("orig-reader.ipynb", datasets=("mlg-ulb/creditcardfraud",), scale="quick")
    assert out.status == "ok", out.error
    assert out.params["datasets"] == {"mlg-ulb/creditcardfraud": "real"}
    assert out.params["dataset_source"] == "real"
    assert out.params["dataset_generators"] == {"mlg-ulb/creditcardfraud": "creditcard"}
    assert "['creditcard.csv'] 2" in code_outputs(
        nbformat.read(ctx.artifacts / out.artifacts[0], as_version=4)
    )


def _plan_show(*args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "plan", "show", *args, "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module")
def study_show() -> list[dict]:
    return _plan_show(
        str(STUDY_PLAN), "-i", "inventory/azure-study.yml", "-i", "inventory/azure.constructed.yml"
    )


def test_plan_show_prints_the_study_matrix_cell_by_cell(study_show: list[dict]) -> None:
    machines = [r["machine"] for r in study_show if "machine" in r]
    table = _table(STUDY_MACHINES)
    assert len(machines) == len(table)
    for got, want in zip(machines, table, strict=True):
        for column, value in want.items():
            cell = got[COLUMNS[column]]
            if column == "groups":
                cell = ",".join(cell)
            elif column == "encryption" and got["azure_vm_security_type"] != "ConfidentialVM":
                cell = "-"
            assert str(cell) == value, (got["host"], column)
        assert got["testbed_disk_encryption"] is (want["encryption"] == "DiskWithVMGuestState")


def test_plan_show_lists_every_execution_of_the_study(study_show: list[dict]) -> None:
    rows = [r for r in study_show if "benchmark" in r]
    summary = study_show[-1]["summary"]
    plan = load_plan(STUDY_PLAN).benchmarks
    assert [r["benchmark"] for r in rows] == [b.name for b in plan for _ in range(b.repetitions)]
    assert summary["executions"] == len(rows) == 32 and summary["machines"] == 6
    assert summary["estimated_s"] == pytest.approx(sum(r["estimated_s"] for r in rows), abs=0.5)
    assert all(r["wait_s"] <= r["estimated_s"] <= r["wait_s"] + r["timeout_s"] for r in rows)


def test_plan_show_prints_each_notebook_s_data_set_and_the_deviations(study_show: list[dict]) -> None:
    rows = [r["dataset"] for r in study_show if "dataset" in r]
    assert [(r["benchmark"], r["dataset"]) for r in rows] == [
        (name, d) for name, sets in STUDY_NOTEBOOKS.items() for d in sets
    ]
    assert all(r["generator"] == dataset_generator(r["dataset"]) for r in rows)
    assert {r["source"] for r in rows} <= {"generated", "real", "real, converted"}
    deviations = [r["deviation"] for r in study_show if "deviation" in r]
    assert [d["id"] for d in deviations] == [d.id for d in S2.deviations()]
    assert all(d["reason"] and d["source"].startswith("S2 L") for d in deviations)
    assert study_show[-1]["summary"]["study"] == {"id": "S2", "fidelity": S2.counts()}


def test_default_matrix_stays_at_four_vcpus() -> None:
    rows = _plan_show(
        "workloads/plans/quick.yml", "-i", "inventory/azure.yml", "-i", "inventory/azure.constructed.yml"
    )
    machines = [r["machine"] for r in rows if "machine" in r]
    assert {(m["vcpus"], m["memory_gib"], m["azure_vm_os_disk_type"]) for m in machines} == {
        (4, 16, "Premium_LRS")
    }
    assert sorted(g for m in machines for g in m["groups"]) == sorted(
        ["sev"] * 2 + ["tdx"] * 2 + ["amd_baseline", "intel_baseline"]
    )


@pytest.mark.slow
def test_run_yml_limited_to_the_study_groups_selects_the_study_machines() -> None:
    """``ansible-playbook run.yml -l sev,tdx,amd_baseline,intel_baseline`` on the preset."""
    venv_bin = Path(sys.executable).parent
    inventories = ["-i", "inventory/azure-study.yml", "-i", "inventory/azure.constructed.yml"]
    limit = ["-l", "sev,tdx,amd_baseline,intel_baseline", "-e", f"plan={STUDY_PLAN.relative_to(ROOT)}"]
    proc = subprocess.run(
        [str(venv_bin / "ansible-playbook"), "run.yml", *inventories, *limit, "--list-hosts"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    listed = {line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("study-")}
    assert listed == {row["host"] for row in _table(STUDY_MACHINES)}


def test_a_broken_alias_table_is_a_param_error(nbdir) -> None:
    (nbdir / "aliases.yml").write_text("notebooks: [not, a, table]\n")
    with pytest.raises(ParamError, match=r"aliases\.yml is not a table") as err:
        locate("SimplePrime.ipynb")
    assert err.value.field == "name"


def _playstore_2021(path: Path, rows: int = 400) -> None:
    """A small file with the columns of the study's Google-Playstore.csv (the 2021 crawl)."""
    import random

    rnd = random.Random(7)
    cats = ["Tools", "Education", "Adventure", "Finance", "Music & Audio"]
    lines = [
        "App Name,App Id,Category,Rating,Rating Count,Installs,Minimum Installs,Maximum Installs,Free,"
        "Price,Currency,Size,Minimum Android,Developer Id,Developer Website,Developer Email,Released,"
        "Last Updated,Content Rating,Privacy Policy,Ad Supported,In App Purchases,Editors Choice,Scraped Time"
    ]
    for i in range(rows):
        paid = i % 9 == 0
        installs = rnd.choice([10, 100, 1000, 50000])
        lines.append(
            f"App {i},com.app.a{i},{cats[i % 5]},{rnd.uniform(2.5, 5):.1f},{rnd.randint(1, 5000)},"
            f'"{installs:,}+",{installs},{installs * 2},{not paid},{1.99 if paid else 0},USD,'
            f'"{rnd.choice(["1,018k", "10M", "5.5M", "Varies with device"])}",4.1 and up,dev{i},,,'
            f'"Feb 26, 2020","{rnd.choice(["Jun 12, 2021", "Jan 3, 2019", "Dec 30, 2020"])}",'
            f"Everyone,,True,False,False,2021-06-15 20:19:35"
        )
    path.write_text("\n".join(lines) + "\n")


def test_study_playstore_2021_file_is_converted_and_recorded_mixed(nbdir, runner: Runner) -> None:
    """The study's Google-Playstore.csv (other columns, no reviews) placed in real/apps/ is what the
    Play Store notebook reads: its apps converted, reviews generated, the record says ``mixed``."""
    shutil.copytree(
        NOTEBOOKS / "datasets", nbdir / "datasets", ignore=shutil.ignore_patterns("real", "__pycache__")
    )
    shutil.copy(NOTEBOOKS / "app-store.ipynb", nbdir / "app-store.ipynb")
    shutil.copy(NOTEBOOKS / "aliases.yml", nbdir / "aliases.yml")
    (nbdir / "datasets" / "real" / "apps").mkdir(parents=True)
    _playstore_2021(nbdir / "datasets" / "real" / "apps" / "Google-Playstore.csv")
    out, ctx = runner.run(
        "google-play-store-analysis.ipynb", datasets=("Google-Playstore.csv",), scale="quick"
    )
    assert out.status == "ok", out.error
    assert out.params["datasets"] == {"Google-Playstore.csv": "mixed"}
    assert out.params["dataset_source"] == "mixed"
    text = code_outputs(nbformat.read(ctx.artifacts / out.artifacts[0], as_version=4))
    assert "(400, 13)" in text, text[:2000]  # every app of the placed file, in the notebook's 13 columns
