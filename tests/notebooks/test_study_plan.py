"""The published data-science study as written (issue 16 items 1 and 2): its classic plan with
the original notebook and data-set names validates, resolves to our notebooks and generators,
reads real data when placed, and ``plan show`` prints its machine matrix as the study describes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbhelpers import NOTEBOOKS, ROOT, STUDY_PLAN, Runner, code_outputs, write_notebook

from testbed_agent.plan import ParamError, load_plan
from testbed_agent.workloads.notebook import locate
from testbed_agent.workloads.notebook.aliases import aliases, dataset_generator, notebook_alias

#: the study's notebooks and their data sets, as the issue lists them (original names)
STUDY_NOTEBOOKS = {
    "credit-fraud-dealing-with-imbalanced-datasets.ipynb": "creditcard.csv",
    "twitter-sentiment-analysis.ipynb": "training.1600000.processed.noemoticon.csv",
    "pneumonia-detection-using-cnn-92-6-accuracy.ipynb": "chest_xray",
    "lstm-sentiment-analysis-keras.ipynb": "Sentiment.csv",
    "getting-started-with-a-movie-recommendation-system.ipynb": "tmdb_5000_movies.csv",
    "airline-delay-notebook.ipynb": "flights.csv",
    "e-commerce-eda-purchase-classification.ipynb": "online_shoppers_intention.csv",
    "google-play-store-analysis.ipynb": "Google-Playstore.csv",
    "creditcard-fraud-balance-is-key-feat-pycaret.ipynb": "creditcard.csv",
    "energy-eda-segmentation-and-prediction.ipynb": "dutch-energy",
}
#: the study's machines, written from its description: 2 vCPU / 8 GiB sizes, 50 GB Standard SSD
STUDY_MACHINES = """
host                label           groups          size               vcpus memory disk            disk_gb security       encryption
study-amd-base-1    AMD-Baseline    amd_baseline    Standard_D2as_v5   2     8      StandardSSD_LRS 50      Standard       -
study-intel-base-1  Intel-Baseline  intel_baseline  Standard_D2s_v5    2     8      StandardSSD_LRS 50      Standard       -
study-sev-1         SEV             sev             Standard_DC2as_v5  2     8      StandardSSD_LRS 50      ConfidentialVM VMGuestStateOnly
study-sev-enc-1     SEV-Encrypted   sev             Standard_DC2as_v5  2     8      StandardSSD_LRS 50      ConfidentialVM DiskWithVMGuestState
study-tdx-1         TDX             tdx             Standard_DC2es_v5  2     8      StandardSSD_LRS 50      ConfidentialVM VMGuestStateOnly
study-tdx-enc-1     TDX-Encrypted   tdx             Standard_DC2es_v5  2     8      StandardSSD_LRS 50      ConfidentialVM DiskWithVMGuestState
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


def test_study_plan_validates_with_its_original_names() -> None:
    plan = load_plan(STUDY_PLAN)
    notebooks = {b.name: b.datasets for b in plan.benchmarks if b.type == "kaggle_notebook"}
    assert notebooks == {name: (data,) for name, data in STUDY_NOTEBOOKS.items()}
    assert [b.name for b in plan.benchmarks if b.type == "fio"] == [
        f"fio_{bs}_{rw}"
        for bs in ("4k", "64k", "1m")
        for rw in ("sequentialread", "sequentialwrite", "randomread", "randomwrite")
    ]
    assert {b.type for b in plan.benchmarks} == {"sysinfo", "fio", "kaggle_notebook", "pyperformance"}


@pytest.mark.parametrize("name", sorted(STUDY_NOTEBOOKS))
def test_original_names_resolve_to_our_notebooks_and_generators(name: str) -> None:
    ours = locate(name)
    assert ours.parent == NOTEBOOKS and ours.name == notebook_alias(name)
    meta = nbformat.read(ours, as_version=4).metadata["testbed"]["datasets"]
    assert [dataset_generator(STUDY_NOTEBOOKS[name])] == meta


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
        "notebooks: {orig-reader.ipynb: reader.ipynb}\ndatasets: {creditcard.csv: creditcard}\n"
    )
    write_notebook(
        nbdir / "reader.ipynb",
        "import os\nrows = open(os.path.join(data_dir, 'creditcard.csv')).read().count(chr(10))",
        "print(sorted(os.listdir(data_dir)), rows)",
    )
    out, ctx = runner.run("orig-reader.ipynb", datasets=("creditcard.csv",), scale="quick")
    assert out.status == "ok", out.error
    assert out.params["datasets"] == {"creditcard.csv": "real"} and out.params["dataset_source"] == "real"
    assert out.params["dataset_generators"] == {"creditcard.csv": "creditcard"}
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
    assert [r["benchmark"] for r in rows] == [b.name for b in load_plan(STUDY_PLAN).benchmarks]
    assert summary["executions"] == len(rows) == 24 and summary["machines"] == 6
    assert summary["estimated_s"] == pytest.approx(sum(r["estimated_s"] for r in rows), abs=0.5)
    assert all(r["wait_s"] <= r["estimated_s"] <= r["wait_s"] + r["timeout_s"] for r in rows)


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
