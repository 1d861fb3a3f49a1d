"""The benchmark script runs (its numbers are read by people, not asserted)."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench.py"


def test_benchmark_prints_a_ratio_per_workload():
    out = subprocess.run([sys.executable, str(BENCH), "--quick", "--repeats", "1"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.rstrip().endswith(("x", "target)"))]
    assert len(rows) == 10, out.stdout
