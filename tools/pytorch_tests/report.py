"""What a run reports: the markdown table, JUnit XML, and the baseline diff.

The baseline is JSON, `{"device": "accinte", "files": {"test_foo.py":
{"device_only": [ids], "cpu_only": [ids], "unpaired": [ids]}}}`: the
disagreements (and failures of device tests without a twin) a run is allowed.
A diff against it lists the new ones (not in the baseline) and the fixed ones
(in the baseline, now agreeing or passing); files not run are left out of both.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .execute import FileRun
from .pairing import FileSummary

COLUMNS = ("file", "paired", "device-only failures", "CPU-only failures", "both fail",
           "unpaired failures", "documented", "crashed", "agreement", "time", "status")


def _percent(agree: int, paired: int) -> str:
    if not paired:
        return "-"
    value = 100.0 * agree / paired
    # Never round a disagreement away: 99.996% is shown as 99.99%, not 100.00%.
    shown = int(value * 100) / 100
    return f"{shown:.2f}%"


def _row(cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def markdown_table(summaries: list[FileSummary]) -> str:
    """One row per file and a total row, in GitHub markdown."""
    # Text columns left-aligned, figures right-aligned.
    lines = [_row(COLUMNS), _row("---" if c in ("file", "status") else "---:" for c in COLUMNS)]
    for s in summaries:
        lines.append(_row((s.file, s.paired, len(s.device_only), len(s.cpu_only), s.both_fail,
                           len(s.unpaired_failures), len(s.documented), len(s.crashed),
                           _percent(s.agree, s.paired),
                           f"{s.elapsed:.0f} s", _shorten(s.status, 120))))
    if len(summaries) > 1:
        paired = sum(s.paired for s in summaries)
        agree = sum(s.agree for s in summaries)
        lines.append(_row((
            "**total**", paired, sum(len(s.device_only) for s in summaries),
            sum(len(s.cpu_only) for s in summaries), sum(s.both_fail for s in summaries),
            sum(len(s.unpaired_failures) for s in summaries),
            sum(len(s.documented) for s in summaries),
            sum(len(s.crashed) for s in summaries), _percent(agree, paired),
            f"{sum(s.elapsed for s in summaries):.0f} s",
            "ok" if all(s.status == "ok" for s in summaries) else "see rows")))
    return "\n".join(lines)


def disagreement_lines(summaries: list[FileSummary]) -> list[str]:
    """`file::test: outcome on the device, outcome on the CPU: message`, device-only
    failures first, then CPU-only ones, then failures of device tests without a twin."""
    lines = []
    for s in summaries:
        for d in s.device_only + s.cpu_only + s.unpaired_failures:
            message = d.message.strip().splitlines()[0] if d.message.strip() else ""
            lines.append(f"{s.file}::{d.test_id}: {d.device_outcome} on the device, "
                         f"{d.cpu_outcome} on the CPU: {message[:300]}")
    return lines


def _testcase(suite, file: str, test_id: str, record: dict):
    cls, _, name = test_id.partition("::")
    case = ET.SubElement(suite, "testcase", classname=f"{Path(file).stem}.{cls}", name=name,
                         time=f"{record.get('time', 0.0):.3f}")
    return case


def _fill_case(case, record: dict, summary: FileSummary, test_id: str) -> str:
    """Adds the outcome element; returns the suite counter it belongs to."""
    outcome, message = record["outcome"], record.get("message", "")
    disagreeing = {d.test_id for d in summary.device_only}
    if outcome == "failed":
        prefix = "device-only failure (the CPU twin passes): " if test_id in disagreeing else ""
        ET.SubElement(case, "failure", message=prefix + message).text = record.get("details")
        return "failures"
    if outcome == "xpassed":
        ET.SubElement(case, "failure", message=f"passed, expected to fail: {message}")
        return "failures"
    if outcome in ("skipped", "xfailed"):
        kind = "expected failure: " if outcome == "xfailed" else ""
        ET.SubElement(case, "skipped", message=kind + message)
        return "skipped"
    return ""


def _file_suite(root, run: FileRun, summary: FileSummary) -> None:
    suite = ET.SubElement(root, "testsuite", name=Path(run.file).stem,
                          time=f"{run.elapsed:.3f}")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for test_id, record in sorted(run.results.items()):
        counts["tests"] += 1
        counter = _fill_case(_testcase(suite, run.file, test_id, record), record, summary,
                             test_id)
        if counter:
            counts[counter] += 1
    for test_id, how in sorted(run.crashed.items()):
        counts["tests"] += 1
        counts["errors"] += 1
        case = _testcase(suite, run.file, test_id, {})
        ET.SubElement(case, "error", type="crash", message=f"the test process {how}")
    if summary.status != "ok":
        counts["tests"] += 1
        counts["errors"] += 1
        case = ET.SubElement(suite, "testcase", classname=Path(run.file).stem, name="file")
        ET.SubElement(case, "error", type="file", message=summary.status).text = run.error
    for key, value in counts.items():
        suite.set(key, str(value))


def write_junit(path: Path, runs: list[FileRun], summaries: list[FileSummary]) -> None:
    """One <testsuite> per file, one <testcase> per test (crashes as errors, a file
    out of time or failing to collect as an error case named `file`)."""
    root = ET.Element("testsuites", name="pytorch-tests")
    for run, summary in zip(runs, summaries):
        _file_suite(root, run, summary)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def baseline_of(summaries: list[FileSummary], device: str) -> dict:
    return {"device": device, "files": {
        s.file: {"device_only": sorted(d.test_id for d in s.device_only),
                 "cpu_only": sorted(d.test_id for d in s.cpu_only),
                 "unpaired": sorted(d.test_id for d in s.unpaired_failures)}
        for s in summaries}}


def write_baseline(path: Path, summaries: list[FileSummary], device: str) -> None:
    """Writes the baseline, keeping the entries of files this run did not run."""
    old = json.loads(path.read_text()) if path.exists() else {"files": {}}
    new = baseline_of(summaries, device)
    old["files"].update(new["files"])
    new["files"] = dict(sorted(old["files"].items()))
    path.write_text(json.dumps(new, indent=1) + "\n")


@dataclass
class BaselineDiff:
    new: list[str] = field(default_factory=list)    # "file::test id"
    fixed: list[str] = field(default_factory=list)


def diff_baseline(baseline: dict, summaries: list[FileSummary]) -> BaselineDiff:
    """New disagreements (not in the baseline) and fixed ones (in it, now agreeing
    or, without a twin, passing)."""
    result = BaselineDiff()
    for s in summaries:
        known = baseline.get("files", {}).get(s.file, {})
        expected = set().union(*(known.get(k, []) for k in ("device_only", "cpu_only",
                                                             "unpaired")))
        now = {d.test_id for d in s.device_only + s.cpu_only + s.unpaired_failures}
        result.new += [f"{s.file}::{t}" for t in sorted(now - expected)]
        result.fixed += [f"{s.file}::{t}" for t in sorted((expected - now) & s.settled)]
    return result
