"""The benchmark script runs (its numbers are read by people, not asserted)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench.py"


def test_benchmark_prints_a_ratio_per_workload():
    out = subprocess.run([sys.executable, str(BENCH), "--quick", "--repeats", "1"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.rstrip().endswith(("x", "target)"))]
    assert len(rows) == 10, out.stdout


def test_distributed_benchmark_prints_a_ratio_per_size_and_the_ddp_step():
    bench = BENCH.parent / "bench_distributed.py"
    out = subprocess.run([sys.executable, str(bench), "--quick", "--repeats", "1"],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "GLOO_SOCKET_IFNAME": "lo"})
    assert out.returncode == 0, out.stdout + out.stderr[-5000:]
    rows = [line for line in out.stdout.splitlines() if line.rstrip().endswith(("x", "target)"))]
    assert [row.split()[0] for row in rows] == ["1", "1", "time"], out.stdout


# About 35 s (a child pytest importing torchmetrics): `make check` leaves it out.
@pytest.mark.slow
def test_ecosystem_benchmark_prints_a_ratio_per_check():
    pytest.importorskip("torchmetrics")
    bench = BENCH.parent / "bench_ecosystem.py"
    out = subprocess.run([sys.executable, str(bench), "--repeats", "1", "-k", "torchmetrics"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr[-5000:]
    rows = [line for line in out.stdout.splitlines() if line.rstrip().endswith(("x", "(missed)"))]
    assert [row.split()[0] for row in rows] == ["torchmetrics", "classification"], out.stdout
