#!/usr/bin/env python3
"""Writes the compatibility table of README.md and docs/chapters/ecosystem.md
from what the integration suite measured (build/ecosystem.json, written by
tests/integrations at the end of a run), so the table is never edited by hand.

The table sits between the lines ``<!-- ECOSYSTEM TABLE START -->`` and
``<!-- ECOSYSTEM TABLE END -->`` of each file.

Usage: ``python tools/ecosystem_table.py [--check]``. Without ``--check`` the
files are rewritten; with it, exit status 1 when the library, version and
status columns in a file differ from the results (the time ratios change
from run to run and are not compared).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "build" / "ecosystem.json"
FILES = [ROOT / "README.md", ROOT / "docs" / "chapters" / "ecosystem.md"]
START, END = "<!-- ECOSYSTEM TABLE START -->", "<!-- ECOSYSTEM TABLE END -->"
sys.path.insert(0, str(ROOT / "tests"))
from integrations.compat import USER_ACTION  # noqa: E402


def table(rows: list[dict]) -> str:
    lines = ["| library | version | runs on accinte (each checked against the CPU) | what a user does "
             "| time accinte/CPU |", "|---|---|---|---|---|"]
    for r in rows:
        if r["skipped"]:
            runs, ratio = f"skipped: {r['skipped']}", "—"
        else:
            runs = ", ".join(r["checks"])
            ratio = f"{r['accinte_seconds'] / r['cpu_seconds']:.2f}x" if r["cpu_seconds"] else "—"
        lines.append(f"| {r['library']} | {r['version']} | {runs} | "
                     f"{USER_ACTION.get(r['library'], '')} | {ratio} |")
    return "\n".join(lines)


def _block(text: str) -> re.Match:
    """The lines between the markers (possibly none), as a match whose group 1
    is the table."""
    match = re.search(re.escape(START) + r"\n(.*?)" + re.escape(END), text, re.S)
    if not match:
        raise SystemExit(f"no {START} ... {END} block")
    return match


def _without_ratio(block: str) -> list[str]:
    return [line.rsplit("|", 2)[0] for line in block.splitlines()]


def main(argv: list[str]) -> int:
    rows = json.loads(RESULTS.read_text())
    fresh = table(rows)
    stale = []
    for path in FILES:
        text = path.read_text()
        match = _block(text)
        if "--check" in argv:
            if _without_ratio(match.group(1).rstrip("\n")) != _without_ratio(fresh):
                stale.append(path.relative_to(ROOT))
        else:
            path.write_text(text[:match.start(1)] + fresh + "\n" + text[match.end(1):])
    for path in stale:
        print(f"{path}: the compatibility table differs from {RESULTS.relative_to(ROOT)}; "
              f"run `make ecosystem-table`")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
