"""The command line of tools/run_pytorch_tests.py: arguments, the loop over
files, and what is printed and written."""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
from pathlib import Path

from . import disabled, execute, pairing, report

REPO = Path(__file__).resolve().parents[2]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run_pytorch_tests.py",
        description="Runs device-generic test files of a PyTorch source tree on a "
                    "PrivateUse1 device next to their CPU twins, and compares them.")
    parser.add_argument("test_dir", type=Path, help="a PyTorch source tree's test/ folder")
    parser.add_argument("files", nargs="*", help="test files relative to TEST_DIR (default: "
                        "every test_*.py in it that calls instantiate_device_type_tests)")
    parser.add_argument("--device", default="accinte",
                        help="the PrivateUse1 backend's name (default: %(default)s)")
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE", help="a module the child imports before the tests "
                        "(the backend's package, when autoload does not register it)")
    parser.add_argument("--disabled-tests", type=Path, metavar="JSON",
                        help="skips and expected failures in PyTorch's disabled-tests format "
                        "with typed reasons (see tools/pytorch_tests/disabled.py)")
    parser.add_argument("--budget", type=float, default=1800.0, metavar="SECONDS",
                        help="time budget of each file, reruns after crashes included "
                        "(default: %(default)s)")
    parser.add_argument("--file-budget", action="append", default=[], metavar="FILE=SECONDS",
                        help="the budget of one file instead of --budget (repeatable)")
    parser.add_argument("--max-crashes", type=int, default=20,
                        help="give a file up after this many crashed tests (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "pytorch-tests",
                        help="logs, records and results.json (default: build/pytorch-tests)")
    parser.add_argument("--junit-xml", type=Path, help="default: OUT/junit.xml")
    parser.add_argument("--baseline", type=Path, metavar="JSON",
                        help="the disagreements allowed; the run fails on any other")
    parser.add_argument("--write-baseline", type=Path, metavar="JSON",
                        help="write this run's disagreements as a baseline (files not run "
                        "keep theirs)")
    parser.add_argument("--bypass-device-restrictions", action="store_true",
                        help="run @onlyCUDA-style tests on the device too "
                        "(PrivateUse1TestBase.bypass_device_restrictions)")
    parser.add_argument("--pytest-arg", dest="pytest_args", action="append", default=[],
                        metavar="ARG", help="an extra pytest argument, repeatable: "
                        "--pytest-arg=-k --pytest-arg=add")
    return parser


def device_generic_files(test_dir: Path) -> list[str]:
    """The top-level test files of a tree that instantiate device-type tests."""
    return sorted(p.name for p in test_dir.glob("test_*.py")
                  if "instantiate_device_type_tests(" in p.read_text(errors="replace"))


def _results_json(path: Path, summaries: list[pairing.FileSummary]) -> None:
    def encode(summary):
        data = dataclasses.asdict(summary)
        data["agreeing"] = len(summary.agreeing)
        data["passing_unpaired"] = len(summary.passing_unpaired)
        return data

    path.write_text(json.dumps([encode(s) for s in summaries], indent=1) + "\n")


def _file_budgets(pairs: list[str]) -> dict[str, float]:
    budgets = {}
    for pair in pairs:
        file, sep, seconds = pair.rpartition("=")
        if not sep or not file:
            raise ValueError(f"--file-budget {pair!r}: expected FILE=SECONDS")
        budgets[file] = float(seconds)
    return budgets


def _options(args) -> execute.Options:
    """The children's options; ValueError on a malformed disabled-tests file or budget."""
    entries = disabled.load(args.disabled_tests)
    return execute.Options(
        test_dir=args.test_dir.resolve(), out_dir=args.out.resolve(), device=args.device,
        imports=tuple(args.imports), disabled=disabled.as_pytorch_json(entries),
        budget=args.budget, file_budgets=_file_budgets(args.file_budget),
        max_crashes=args.max_crashes,
        bypass_device_restrictions=args.bypass_device_restrictions,
        pytest_args=tuple(args.pytest_args))


def _progress(run: execute.FileRun, summary: pairing.FileSummary) -> None:
    print(f"{run.file}: {len(run.results) + len(run.crashed)} tests in {run.elapsed:.0f} s, "
          f"{len(run.crashed)} crashed, {len(summary.device_only)} device-only failures; "
          f"{summary.status} (log: {run.log})", file=sys.stderr, flush=True)


def _print_diff(args, summaries) -> list[str]:
    """Prints the baseline diff; returns the new disagreements."""
    baseline = json.loads(args.baseline.read_text()) if args.baseline else {}
    diff = report.diff_baseline(baseline, summaries)
    if args.baseline:
        print(f"\nAgainst the baseline {args.baseline}: {len(diff.new)} new, "
              f"{len(diff.fixed)} fixed")
        for test in diff.new:
            print(f"  new: {test}")
        for test in diff.fixed:
            print(f"  fixed: {test}")
    return diff.new


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through execute, which kills the child


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if not args.test_dir.is_dir():
        print(f"error: {args.test_dir} is not a folder", file=sys.stderr)
        return 2
    try:
        options = _options(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    files = args.files or device_generic_files(options.test_dir)
    missing = [f for f in files if not (options.test_dir / f).is_file()]
    if missing:
        print(f"error: not in {options.test_dir}: {', '.join(missing)}", file=sys.stderr)
        return 2
    runs, summaries = [], []
    for file in files:
        run = execute.run_file(options, file)
        summary = pairing.summarise(run, options.device)
        _progress(run, summary)
        runs.append(run)
        summaries.append(summary)
    print(report.markdown_table(summaries))
    lines = report.disagreement_lines(summaries)
    if lines:
        print("\nDisagreements:")
        print("\n".join(f"  {line}" for line in lines))
    for s in summaries:
        for test_id in s.fixed_documented:
            print(f"  passes now, remove its entry: {s.file}::{test_id}")
    report.write_junit(args.junit_xml or options.out_dir / "junit.xml", runs, summaries)
    _results_json(options.out_dir / "results.json", summaries)
    if args.write_baseline:
        report.write_baseline(args.write_baseline, summaries, options.device)
    new = _print_diff(args, summaries)
    return 1 if new or any(s.status != "ok" for s in summaries) else 0
