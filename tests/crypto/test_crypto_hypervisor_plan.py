"""The report's crypto tables in the shape of S4's (algorithm x key size x file size x op, per label)
and its ratio of averages between two labels. S4's plan against its paper: test_s4_study.py."""

from __future__ import annotations

import pandas as pd
import pytest

from testbed_reports import crypto_tables


def test_ratio_of_averages_between_labels() -> None:
    rows = []
    for label, scale in (("hyperv", 1.0), ("kvm", 0.8)):
        for alg, t in (("aes-cbc", 1.0), ("3des-cbc", 3.0)):
            rows.append(
                {
                    "label": label,
                    "language": "go",
                    "cpus": 1,
                    "alg": alg,
                    "key_bits": 128,
                    "file_bytes": 1024,
                    "op": "encrypt",
                    "time_s": t * scale,
                    "cold_time_s": t,
                    "throughput_Bps": 1.0,
                    "cpu_percent": 50.0 * scale,
                    "system_cpu_percent": 60.0,
                }
            )
    table = crypto_tables.seed004_table(pd.DataFrame(rows))
    ratio = crypto_tables.ratio_of_averages(table)
    assert len(ratio) == 1 and ratio.loc[0, "cells"] == 2
    assert ratio.loc[0, ["a", "b"]].tolist() == ["hyperv", "kvm"]
    assert ratio.loc[0, "time_ratio_b_a"] == pytest.approx(0.8)
    assert ratio.loc[0, "cpu_ratio_b_a"] == pytest.approx(0.8)


def test_file_kinds_are_kept_apart() -> None:
    """Cells of the S4 file kinds (pdf, image, archive) land in rows of their kind."""
    rec = {
        "benchmark": "rsa-e01",
        "params": {"alg": "rsa-raw", "payload": "pdf"},
        "groups": ["kvm"],
        "samples": {
            "cells": [
                {
                    "cell": "python.encrypt",
                    "language": "python",
                    "op": "encrypt",
                    "key_bits": 64,
                    "bytes": 620544,
                    "cpus": 1,
                    "status": "ok",
                }
            ]
        },
        "metrics": {"python.encrypt.time_per_op": {"value": 1.0, "unit": "s", "better": "lower"}},
    }
    rows = crypto_tables.cell_rows(rec)
    assert [(r["file_kind"], r["groups"], r["cpus"]) for r in rows] == [("pdf", "kvm", 1)]
