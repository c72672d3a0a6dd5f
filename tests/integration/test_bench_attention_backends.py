"""The attention-kernel benchmark (`benchmarks.bench_attention_backends`) with --tiny on this machine:
a row per configuration, both passes measured, and the operator each ran named (on a GPU it is the
probe that found cuDNN's attention behind bf16's slow first pass)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow  # seven or eight configurations, each in a fresh process: about 30 s on 2 cores

REPOSITORY = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^(?P<name>.+?)\s+first pass\s+(?P<first>[\d.]+) ex/s, second\s+(?P<second>[\d.]+) ex/s; (?P<ops>.+)")


def test_every_configuration_trains_twice_and_names_its_attention_operator():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_attention_backends", "--tiny"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {match["name"]: match for line in done.stdout.splitlines() if (match := ROW.match(line))}
    expected = 8 if torch.cuda.is_available() else 7  # cuDNN's attention alone: a GPU only
    assert len(rows) == expected, done.stdout
    assert all(float(row["first"]) > 0 and float(row["second"]) > 0 for row in rows.values())
    for name, row in rows.items():
        if "eager" in name:
            assert row["ops"] == "none"  # transformers' eager attention: matrix products, no SDPA kernel
        else:
            assert "scaled_dot_product_attention" in row["ops"]
        if "without cuDNN" in name:
            assert "cudnn" not in row["ops"]
