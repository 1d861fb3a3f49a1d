"""accinte time / CPU time of the integration suite's checks (the ecosystem
table's time column), per check and per library, with more repeats than the
suite's own run.

Runs tests/integrations under pytest in a child process, every check timed on
the CPU and on accinte alternately `--repeats` times (twins.run_both), and
prints the medians' ratios; a library's ratio is the sum of its checks'
medians on accinte over the same on the CPU, as in the table. Results go to a
file of their own, so build/ecosystem.json (the table's source) is untouched.

    python benchmarks/bench_ecosystem.py [--repeats N] [-k EXPRESSION]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.10  # issue #30: every row at most 1.10x the CPU


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("-k", default="", help="pytest's -k, to pick checks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "ecosystem.json"
        env = {**os.environ, "ACCINTE_ECOSYSTEM_REPEATS": str(args.repeats),
               "ACCINTE_ECOSYSTEM_RESULTS": str(results)}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                   "tests/integrations", "--deselect", "tests/integrations/test_table.py"]
        if args.k:
            command += ["-k", args.k]
        run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if run.returncode != 0 or not results.exists():
            print(run.stdout[-5000:], run.stderr[-5000:], sep="\n")
            return 1
        rows = json.loads(results.read_text())
    print(f"medians of {args.repeats} interleaved repeats; target <= {TARGET:.2f}x per library")
    for row in rows:
        if row["skipped"] or not row["cpu_seconds"]:
            continue
        ratio = row["accinte_seconds"] / row["cpu_seconds"]
        verdict = "" if ratio <= TARGET else "  (missed)"
        print(f"{row['library']:<24} {row['cpu_seconds'] * 1e3:9.1f} ms CPU "
              f"{row['accinte_seconds'] * 1e3:9.1f} ms accinte {ratio:6.2f}x{verdict}")
        for check, cpu, acc in row["timings"]:
            print(f"    {check:<40} {cpu * 1e3:9.1f} {acc * 1e3:9.1f} {acc / cpu:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
