"""The results store (issue 36): Parquet in the Hive layout, written through the one record path,
idempotent, versioned, readable by DuckDB SQL alone, and the report's statistics unchanged by it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import test_study_s0
import test_study_s1
import test_study_s2
import test_study_s3
import test_study_s4
import yaml
from report_support.synth import Machine, write_run

import testbed_reports.build as build_module
from testbed_reports.cli import main
from testbed_reports.engine import paths_dataset
from testbed_reports.load import load, text_objects
from testbed_reports.parts import Parts
from testbed_reports.store import SCHEMA_KEY, STORE_SCHEMA, Store, StoreError, encode
from testbed_reports.study import manifest, view_module

QUICK = Path(__file__).parent / "data" / "quick-run"
ROOT = Path(__file__).resolve().parents[2]


def _whole(paths, mapping, defaults) -> Parts:
    """The JSON Lines read directly, as one part (what build read before the store)."""
    return Parts.whole(load(paths, mapping, defaults))


def _tree(root: Path) -> dict[str, str]:
    """SHA-256 of every file of a store (its lock and spill directory aside)."""
    return {
        f.relative_to(root).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(root.rglob("*"))
        if f.is_file() and f.name != ".lock" and ".spill" not in f.parts
    }


def _run(tmp: Path, run_id: str = "r1", factor: float = 1.05, seed: int = 1) -> Path:
    ms = [
        Machine("sev-1", "SEV Plain", ["sev"], factor, "sev-snp"),
        Machine("amd-1", "AMD/Plain = base", ["amd_baseline"], 1.0),
    ]
    return write_run(tmp / "results", run_id, ms, ["bench_a", "bench_b"], 6, seed=seed)


def test_adding_a_run_twice_leaves_the_same_bytes(tmp_path: Path) -> None:
    run = _run(tmp_path)
    store = tmp_path / "results" / "_store"
    assert main(["store", "add", str(run), "--store", str(store)]) == 0
    first = _tree(store)
    assert main(["store", "add", str(run), "--store", str(store)]) == 0  # stored already: untouched
    assert _tree(store) == first
    shutil.rmtree(store)
    assert main(["store", "add", str(run), "--store", str(store)]) == 0  # written again from scratch
    assert _tree(store) == first
    old_manifest = json.loads((store / "manifests" / "r1.json").read_text())
    run.joinpath("sev-1.jsonl").touch()  # changed since (mtime): rewritten, the same data bytes
    Store(store).add(run)
    now = _tree(store)
    assert {k: v for k, v in now.items() if "manifests" not in k} == {
        k: v for k, v in first.items() if "manifests" not in k
    }
    new_manifest = json.loads((store / "manifests" / "r1.json").read_text())
    for m in (old_manifest, new_manifest):
        for src in m["sources"]:
            src.pop("mtime_ns")
    assert new_manifest == old_manifest  # only the file time it records moved
    names = sorted(first)
    assert "observations/run=r1/label=SEV%20Plain/sev-1.parquet" in names
    assert f"observations/run=r1/label={encode('AMD/Plain = base')}/amd-1.parquet" in names
    assert "records/run=r1/amd-1.parquet" in names and "manifests/r1.json" in names
    meta = pq.read_schema(store / "records" / "run=r1" / "sev-1.parquet").metadata
    assert meta[SCHEMA_KEY] == str(STORE_SCHEMA).encode()


def test_the_record_selection_applies_on_the_way_in(tmp_path: Path) -> None:
    run = _run(tmp_path)
    f = run / "sev-1.jsonl"
    lines = f.read_text().splitlines()
    retry = json.loads(lines[0])
    retry.update(attempt=2, status="ok")
    retry["metrics"]["clat_mean_s"]["value"] = 123.0
    first = json.loads(lines[0]) | {"status": "failed", "metrics": {}, "error": "boom"}
    f.write_text("\n".join([json.dumps(first), *lines[1:], lines[1], json.dumps(retry)]) + "\n")
    Store(tmp_path / "store").add(run)
    con = duckdb.connect()
    glob = str(tmp_path / "store" / "records" / "*" / "*.parquet")
    n, statuses = con.execute(
        "SELECT count(*), list(DISTINCT status) FROM read_parquet(?)", [glob]
    ).fetchone()
    assert n == 24 and statuses == ["ok"]  # a duplicate counted once, the failed first attempt replaced
    obs = str(tmp_path / "store" / "observations" / "*" / "*" / "*.parquet")
    assert con.execute("SELECT count(*) FROM read_parquet(?) WHERE value = 123.0", [obs]).fetchone()[0] == 1


def test_the_store_is_plain_parquet_that_sql_alone_reads(tmp_path: Path) -> None:
    """DuckDB SQL and nothing of the project: the means per label equal the JSON Lines' own."""
    run = _run(tmp_path)
    Store(tmp_path / "results" / "_store").add(run)
    want: dict[tuple[str, str], list[float]] = {}
    for f in run.glob("*.jsonl"):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            for name, m in rec["metrics"].items():
                want.setdefault((rec["label"], name), []).append(m["value"])
    sql = """
        SELECT label, metric, count(*) AS n, avg(value) AS mean
        FROM read_parquet(?, hive_partitioning = true)
        WHERE run = 'r1' GROUP BY label, metric ORDER BY label, metric
    """
    glob = str(tmp_path / "results" / "_store" / "observations" / "*" / "*" / "*.parquet")
    rows = duckdb.connect().execute(sql, [glob]).fetchall()
    assert [(lab, m) for lab, m, _, _ in rows] == sorted(want)
    for label, metric, n, mean in rows:
        assert n == len(want[(label, metric)])
        assert mean == pytest.approx(np.mean(want[(label, metric)]), rel=1e-12)


def test_a_run_id_already_stored_from_another_run_is_kept_apart(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "same", seed=1)
    b = _run(tmp_path / "b", "same", seed=2)
    st = Store(tmp_path / "store")
    st.add(a)
    (m,) = st.add(b)
    assert m.run == "same@2"
    (again,) = st.add(a)  # the first is still the first
    assert again.run == "same"
    assert {x.run for x in st.manifests()} == {"same", "same@2"}


def test_an_older_store_is_migrated_from_its_sources_with_a_message(tmp_path: Path) -> None:
    run = _run(tmp_path)
    store = tmp_path / "results" / "_store"
    Store(store).add(run)
    first = _tree(store)
    meta = json.loads((store / "store.json").read_text())
    (store / "store.json").write_text(json.dumps(meta | {"store_schema": 0}))
    for f in (store / "records").rglob("*.parquet"):  # an older writer: no block column
        pq.write_table(pq.read_table(f).drop(["block"]), f)
    notes = Store(store).check()
    assert notes == [
        f"store {store}: run r1 migrated from store schema 0 to {STORE_SCHEMA} (re-read from {run})"
    ]
    assert _tree(store) == first
    ds = paths_dataset([run], store=store)
    assert len(ds.obs) == 2 * 2 * 6 * 2


def test_an_older_store_without_its_sources_and_a_newer_one_are_clear_errors(tmp_path: Path) -> None:
    run = _run(tmp_path)
    store = tmp_path / "results" / "_store"
    Store(store).add(run)
    meta = json.loads((store / "store.json").read_text())
    (store / "store.json").write_text(json.dumps(meta | {"store_schema": STORE_SCHEMA + 1}))
    with pytest.raises(StoreError, match=r"newer than this testbed-report reads") as exc:
        Store(store).check()
    assert "upgrade testbed-report" in exc.value.hint
    (store / "store.json").write_text(json.dumps(meta | {"store_schema": 0}))
    shutil.rmtree(run)
    with pytest.raises(StoreError, match=r"store schema 0 is older than 1 and run r1 cannot be re-read"):
        Store(store).check()
    assert (store / "records" / "run=r1").exists()  # nothing deleted


def _stats(out: Path) -> dict:
    data = json.loads((out / "stats.json").read_text())
    return {k: v for k, v in data.items() if k not in ("generated_at", "name")}


def test_build_through_the_store_gives_the_same_statistics_as_the_json_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick run and a synthetic three-run set: every output but the HTML (its time stamp) equal."""
    results = tmp_path / "results"
    shutil.copytree(QUICK, results / "quick")
    runs = [_run(tmp_path, f"r{i}", factor=1.0 + 0.02 * i, seed=i) for i in range(3)]
    for paths in ([results / "quick"], runs):
        new = tmp_path / "new"
        build_module.build(paths, new, store=tmp_path / "store")
        with monkeypatch.context() as m:
            m.setattr(build_module, "paths_parts", lambda p, c=None, d=None, s=None, n=None: _whole(p, c, d))
            build_module.build(paths, tmp_path / "old")
        assert _stats(new) == _stats(tmp_path / "old")
        for f in sorted((tmp_path / "old").glob("*.csv")):
            assert f.read_bytes() == (new / f.name).read_bytes(), f.name
        shutil.rmtree(new)
        shutil.rmtree(tmp_path / "old")


def _s1_results(tmp: Path) -> Path:
    plan = ROOT / "workloads/plans/faas-io.yml"
    rng = np.random.default_rng(3)
    lines = []
    for i, b in enumerate(yaml.safe_load(plan.read_text())["benchmarks"]):
        for rep in range(3):
            lat = {
                "write_latency_s": float(rng.uniform(0.1, 1)),
                "read_latency_s": float(rng.uniform(0.1, 1)),
            }
            rec = test_study_s1._record(
                b["name"], rep, b["params"], lat, f"2026-01-0{1 + rep}T10:00:0{i % 10}Z"
            )
            rec["index"] = i
            lines.append(json.dumps(rec))
    (tmp / "res").mkdir()
    (tmp / "res" / "faas.jsonl").write_text("\n".join(lines) + "\n")
    return tmp / "res"


STUDY_RESULTS = {
    "S0": test_study_s0.paper_store,
    "S1": _s1_results,
    "S2": test_study_s2.paper_store,
    "S3": test_study_s3._store,
    "S4": test_study_s4.paper_store,
}


@pytest.mark.parametrize("study", sorted(STUDY_RESULTS))
def test_the_study_views_are_the_same_through_the_store(study: str, tmp_path: Path) -> None:
    (tmp_path / "gen").mkdir()
    results = STUDY_RESULTS[study](tmp_path / "gen")
    man = manifest(study)
    mod = view_module(man.id)
    old = mod.build(load([results]), man).as_json()
    new = mod.build(paths_dataset([results], store=tmp_path / "store"), man).as_json()
    assert json.dumps(new, sort_keys=True, default=str) == json.dumps(old, sort_keys=True, default=str)


def test_the_dataset_read_back_is_the_loaders(tmp_path: Path) -> None:
    """Column by column, in the loader's order (observations, records, parameters, fingerprints)."""
    results = tmp_path / "results"
    shutil.copytree(QUICK, results / "quick")
    old = load([results / "quick"])
    new = paths_dataset([results / "quick"], store=tmp_path / "store")
    pd.testing.assert_frame_equal(new.obs, old.obs, check_categorical=False, check_dtype=False)

    def plain(df: pd.DataFrame) -> pd.DataFrame:  # a missing value is missing, None or NaN
        return df.astype(object).where(df.notna(), None)

    pd.testing.assert_frame_equal(plain(new.records), plain(old.records))
    assert new.params == old.params and new.sysinfo == old.sysinfo and new.crypto == old.crypto
    assert new.sources == old.sources and new.warnings == old.warnings and new.margins == old.margins


def test_the_store_reads_start_times_as_a_categorical(tmp_path: Path) -> None:
    """Issue 36: one run's start times come back as codes (4 bytes a row, not an object each);
    run order and the observation export give what the loader's objects give."""
    from testbed_reports import export
    from testbed_reports.diagnostics import run_order

    results = tmp_path / "results"
    shutil.copytree(QUICK, results / "quick")
    old = load([results / "quick"])
    new = paths_dataset([results / "quick"], store=tmp_path / "store")
    assert isinstance(new.obs["started_at"].dtype, pd.CategoricalDtype)
    assert text_objects(new.obs["started_at"]).tolist() == old.obs["started_at"].tolist()
    assert run_order(new.obs).tolist() == run_order(old.obs).tolist()
    export.export_csv(old, tmp_path / "old.csv")
    export.export_csv(new, tmp_path / "new.csv")
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    pd.testing.assert_frame_equal(export.observations(new), export.observations(old), check_dtype=False)


def test_columns_written_column_wise_are_the_list_paths(tmp_path: Path) -> None:
    """The store builds Arrow columns from numpy and categoricals (issue 36: no Python list per
    value); each column's file has the same bytes as the per-value list path's, missing values
    and NaN included; build's category-wise text tests equal ``astype(str)``'s."""
    from testbed_reports.build import _text_in, _text_set
    from testbed_reports.store import OBS_SCHEMA, REC_SCHEMA, _column, _text_values

    df = pd.DataFrame(
        {
            "label": pd.Categorical(["a b", None, "c/d", "a b"], categories=["a b", "c/d", "unused"]),
            "value": [1.5, float("nan"), -0.0, 1e300],
            "index": np.array([0, -1, 3, 7], dtype=np.int64),
            "primary": [True, False, True, False],
            "host": pd.Series(["h1", None, "h2", "h1"], dtype="str"),
            "error": [None, "boom", float("nan"), "x"],
        }
    )
    for c in df.columns:
        table, schema = ("observations", OBS_SCHEMA) if c in OBS_SCHEMA.names else ("records", REC_SCHEMA)
        fast = _column(df, c, schema.field(c).type)
        listed = _column(df, c)  # the per-value path
        digests = []
        for key, vals in (("fast", fast), ("list", listed)):
            data = {f.name: vals if f.name == c else [None] * len(df) for f in schema}
            Store._write(table, tmp_path / key, "x.parquet", data)
            digests.append(hashlib.sha256((tmp_path / key / table / "x.parquet").read_bytes()).hexdigest())
        assert digests[0] == digests[1], c
    lab = df["label"]
    assert list(_text_values(lab)) == ["a b", None, "c/d", "a b"]
    assert _text_in(lab, {"c/d", "nan"}).tolist() == lab.astype(str).isin({"c/d", "nan"}).tolist()
    got, want = _text_set(lab), set(lab.astype(str))
    assert {x for x in got if isinstance(x, str)} == {x for x in want if isinstance(x, str)}
    assert any(pd.isna(x) for x in got) == any(pd.isna(x) for x in want)  # the missing value


def test_the_compact_paths_are_the_per_value_ones() -> None:
    """Issue 36's array paths give what the per-row Python paths gave: a run's grouping key from
    metric codes, run order from start-time ranks, an axis scale from a float array."""
    from testbed_reports import display
    from testbed_reports.diagnostics import run_order
    from testbed_reports.runs import _text_codes

    metric = pd.Series(["b", "a", "c", "b", "a"], dtype="category")
    for col in (metric, metric.astype(object)):
        codes = _text_codes(col)
        text = col.astype(str).to_numpy(dtype=object)
        assert [(codes == codes[i]).tolist() for i in range(5)] == [
            (text == text[i]).tolist() for i in range(5)
        ]
    starts = ["2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2025-12-31T23:59:59Z"]
    obs = pd.DataFrame({"started_at": np.asarray(starts, dtype=object), "repetition": [0, 2, 1, 5]})
    assert run_order(obs).tolist() == [3, 2, 1, 0]
    for cats in (None, [*sorted(set(starts)), "2027"], sorted(set(starts), reverse=True)):
        as_codes = obs.assign(started_at=pd.Categorical(starts, categories=cats))  # the store's
        assert run_order(as_codes).tolist() == [3, 2, 1, 0]
    rng = np.random.default_rng(7)
    for vals in (rng.lognormal(-9, 3, 1001), np.array([0.0, np.nan, 2e6, -3e3, np.inf]), np.zeros(0)):
        assert display.common_scale(vals, "s") == display.common_scale(vals.tolist(), "s")
        assert display.common_scale(vals, "B/s") == display.common_scale(vals.tolist(), "B/s")


def test_groups_from_category_codes_are_pandas_groups() -> None:
    """``numerics.key_groups`` (a count per code combination) gives pandas' groupby table and
    group numbers: unobserved combinations left out, rows in any order, and through pandas for
    keys that are not categorical or have a missing value."""
    from testbed_reports.numerics import key_groups

    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        {
            "a": pd.Categorical(rng.choice(["x", "y", "z"], 500), categories=["z", "x", "y", "w"]),
            "b": pd.Categorical(rng.choice(["p", "q"], 500)),
            "c": rng.choice(["u", "v"], 500),
        }
    )
    for keys, frame in ((["a", "b"], df), (["b", "a"], df[df["a"] != "x"]), (["a", "c"], df)):
        for part in (frame, frame.assign(a=frame["a"].where(frame.index % 7 > 0))):
            table, codes = key_groups(part, keys, "n")
            grouped = part.groupby(keys, observed=True, sort=True)
            pd.testing.assert_frame_equal(table, grouped.size().reset_index(name="n"))
            np.testing.assert_array_equal(codes, grouped.ngroup().to_numpy())


def test_the_observations_integers_are_in_the_narrowest_type(tmp_path: Path) -> None:
    """Issue 36: the store's observations hold repetition, index and record in the narrowest
    integer type that holds them (a byte a row for a small run); a value past int32 keeps its
    column int64."""
    from testbed_reports.engine import INT_COLUMNS, small_ints

    results = tmp_path / "results"
    shutil.copytree(QUICK, results / "quick")
    obs = paths_dataset([results / "quick"], store=tmp_path / "store").obs
    assert all(obs[c].dtype == np.int8 for c in INT_COLUMNS)  # the quick run: a few records
    assert small_ints(np.array([-1, 300])).dtype == np.int16
    assert small_ints(np.array([-1, 2**31 - 1])).dtype == np.int32
    wide = small_ints(np.array([-1, 2**31]))
    assert wide.dtype == np.int64 and wide.tolist() == [-1, 2**31]


def test_statistics_a_batch_of_groups_at_a_time_are_every_row_at_once(monkeypatch) -> None:
    """Issue 36: grouped ranks and medians computed a batch of whole groups at a time (less
    memory) are pandas' over every row, ties and groups of one included; distinct rows from
    codes in place are ``drop_duplicates``'s."""
    from testbed_reports import numerics
    from testbed_reports.diagnostics import _row_medians
    from testbed_reports.runs import group_ranks

    monkeypatch.setattr(numerics, "GROUP_BATCH", 50)
    rng = np.random.default_rng(11)
    codes = np.sort(rng.integers(0, 40, 2000)).astype(np.int32)
    codes = rng.permutation(np.append(codes, 45))  # a group alone; groups 40-44 empty
    values = np.round(rng.lognormal(0, 1, len(codes)), 1)  # ties
    series = pd.Series(values).groupby(codes)
    assert len(numerics.group_batches(codes)) > 10
    np.testing.assert_array_equal(group_ranks(values, codes), series.rank().to_numpy())
    np.testing.assert_array_equal(_row_medians(values, codes, 46), series.transform("median").to_numpy())
    want = series.median().reindex(range(46)).to_numpy()
    np.testing.assert_array_equal(numerics.group_medians(values, codes, 46), want)
    df = pd.DataFrame(
        {
            "a": pd.Categorical(rng.choice(["x", "y", None], 300), categories=["y", "x", "w"]),
            "b": rng.random(300) > 0.5,
        }
    )
    pd.testing.assert_frame_equal(numerics.distinct_rows(df, ["a", "b"]), df.drop_duplicates())


def test_the_report_statistics_a_batch_of_groups_at_a_time_are_the_same(tmp_path: Path, monkeypatch) -> None:
    """Issue 36: describe, findings and the comparison sides computed a batch of whole groups at
    a time (``numerics.GROUP_BATCH`` rows) are, to the bit, those over every row at once."""
    from testbed_reports import numerics
    from testbed_reports.diagnostics import findings
    from testbed_reports.inference import sides
    from testbed_reports.runs import Runs
    from testbed_reports.stats import describe

    results = tmp_path / "results"
    shutil.copytree(QUICK, results / "quick")
    obs = paths_dataset([results / "quick"], store=tmp_path / "store").obs
    rng = np.random.default_rng(5)
    values = obs["value"].to_numpy() * np.linspace(1, 1.3, len(obs))  # some drift
    values[rng.integers(0, len(obs), 20)] *= 40  # and outliers
    values[rng.integers(0, len(obs), 3)] = np.nan  # and a few missing values (pandas' paths)
    obs = obs.assign(value=values)
    got = []
    for size in (numerics.GROUP_BATCH, 40):
        monkeypatch.setattr(numerics, "GROUP_BATCH", size)
        shared = Runs.of(obs)
        side = {k: vars(s) for k, s in sides(obs, shared).items()}
        got.append((describe(obs, shared), findings(obs, 0.05, shared), side))
    (d0, f0, s0), (d1, f1, s1) = got
    assert len(numerics.group_batches(Runs.of(obs).machines()[1])) > 3
    pd.testing.assert_frame_equal(d0, d1, check_exact=True)
    assert f0 == f1 and s0.keys() == s1.keys()
    for k, side in s0.items():
        for name, v in side.items():
            np.testing.assert_array_equal(np.asarray(v), np.asarray(s1[k][name]), err_msg=f"{k} {name}")
