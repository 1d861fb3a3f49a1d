#!/usr/bin/env python3
"""Checks that the documentation and the code agree on LITERALINCLUDE markers.

The chapters under docs/ pull code in only through named marker pairs, comment
lines of the form ``<comment> LITERALINCLUDE START: NAME`` and
``<comment> LITERALINCLUDE END: NAME`` (``//`` in C and C++, ``#`` in Python,
CMake, Makefiles and TOML). This tool fails when:

- a pair in the code is malformed: an END before its START, a START inside
  another pair (nesting or overlap), a START never ended, a name used by two
  pairs, a pair around no lines, or a marker-like comment that does not follow
  the form;
- a marker name is a prefix of another one in the same file: Sphinx's
  ``:start-after:`` and ``:end-before:`` select the first line that *contains*
  their text, so ``START: ALPHA`` would also match ``START: ALPHA TWO`` and the
  include would depend on which pair comes first;
- a ``literalinclude`` in docs/**/*.md does not use a marker pair (line
  numbers and other selectors are refused), names a file that does not exist,
  or names a marker that is not in that file (it says where the marker is, if
  it is somewhere else);
- a marker pair in the code is used by no chapter.

Usage: ``python tools/check_doc_markers.py [ROOT]`` (ROOT defaults to the
repository). Exit status 0 when everything agrees, 1 with one line per problem
otherwise.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

# What counts as source: where markers may live.
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".py", ".cmake", ".toml",
                   ".mk", ".sh"}
SOURCE_NAMES = {"CMakeLists.txt", "Makefile", "GNUmakefile"}
# Directories never scanned (relative to the root), and names skipped anywhere.
SKIP_PATHS = {Path("docs/_build")}
SKIP_NAMES = {".git", ".venv", "venv", "build", "build-asan", "_build", "__pycache__", ".pytest_cache",
              "node_modules"}

KEYWORD = "LITERALINCLUDE"
# A marker line: nothing but the comment leader, the keyword, the kind and the name.
MARKER_RE = re.compile(r"^\s*(?://|#)\s*" + KEYWORD + r" (START|END): ([A-Z0-9][A-Z0-9 _.\-]*?)\s*$")
# A comment line that mentions the keyword (to catch misspelt markers).
COMMENT_MENTION_RE = re.compile(r"^\s*(?://|#).*\b" + KEYWORD + r"\b")
# The text a chapter passes to :start-after: / :end-before:.
OPTION_VALUE_RE = re.compile(KEYWORD + r" (START|END): (.+?)\s*$")
# Opening of a literalinclude directive in MyST (backtick or colon fence) or
# in an eval-rst block.
DIRECTIVE_RE = re.compile(r"^\s*(?:(`{3,}|:{3,})\{literalinclude\}|\.\. literalinclude::)\s*(\S+)\s*$")
OPTION_RE = re.compile(r"^\s*:([\w-]+):\s*(.*?)\s*$")
YAML_OPTION_RE = re.compile(r"^\s*([\w-]+):\s*(.*?)\s*$")
# Markdown files under docs/ that are not pages of the site (conf.py excludes
# them too), relative to docs/.
NOT_PAGES = {Path("README.md")}
# Selectors that would pick code by position or by something other than a marker.
FORBIDDEN_OPTIONS = {"lines", "start-at", "end-at", "start-line", "end-line", "pyobject"}


@dataclass(frozen=True)
class Marker:
    """One well-formed START/END pair in a source file."""

    name: str
    path: Path  # relative to the root
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Use:
    """One literalinclude in a chapter."""

    doc: Path  # relative to the root
    line: int
    target: Path  # the included file, relative to the root (may not exist)
    options: tuple[tuple[str, str], ...]


def _skipped(rel: Path) -> bool:
    if any(part in SKIP_NAMES for part in rel.parts):
        return True
    return any(rel == skip or skip in rel.parents for skip in SKIP_PATHS)


def source_files(root: Path) -> list[Path]:
    """Every file under `root` that may hold markers, relative to `root`, sorted."""
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if _skipped(rel) or not path.is_file():
            continue
        if path.suffix in SOURCE_SUFFIXES or path.name in SOURCE_NAMES:
            found.append(rel)
    return sorted(found)


def _prefix_problems(rel: Path, in_file: list[Marker]) -> list[str]:
    """One problem per pair of names in one file where one name starts the other."""
    problems = []
    for short in in_file:
        for long in in_file:
            if long.name != short.name and long.name.startswith(short.name):
                problems.append(f"{rel}:{short.start_line}: marker {short.name!r} is a prefix of "
                                f"{long.name!r} (line {long.start_line}) in the same file; "
                                "Sphinx matches :start-after: and :end-before: as substrings, "
                                "so rename one")
    return problems


def collect_markers(root: Path) -> tuple[dict[str, list[Marker]], list[str]]:
    """Marker pairs by name, and the problems found in the sources."""
    markers: dict[str, list[Marker]] = defaultdict(list)
    problems: list[str] = []
    for rel in source_files(root):
        try:
            lines = (root / rel).read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            continue
        open_name, open_line = None, 0
        in_file: list[Marker] = []
        for number, text in enumerate(lines, start=1):
            if KEYWORD not in text:
                continue
            match = MARKER_RE.match(text)
            if match is None:
                if COMMENT_MENTION_RE.match(text):
                    problems.append(f"{rel}:{number}: malformed marker line {text.strip()!r} "
                                    f"(expected '{KEYWORD} START: NAME' or '{KEYWORD} END: NAME', "
                                    "NAME in upper case)")
                continue
            kind, name = match.groups()
            if kind == "START":
                if open_name is not None:
                    problems.append(f"{rel}:{number}: START {name!r} inside pair {open_name!r} "
                                    f"opened at line {open_line} (markers must not nest or overlap)")
                open_name, open_line = name, number
                continue
            if open_name is None:
                problems.append(f"{rel}:{number}: END {name!r} without a START before it")
            elif name != open_name:
                problems.append(f"{rel}:{number}: END {name!r} closes pair {open_name!r} "
                                f"opened at line {open_line} (markers must not nest or overlap)")
                open_name = None
            else:
                if number == open_line + 1:
                    problems.append(f"{rel}:{open_line}: pair {name!r} encloses no lines")
                in_file.append(Marker(name, rel, open_line, number))
                markers[name].append(in_file[-1])
                open_name = None
        if open_name is not None:
            problems.append(f"{rel}:{open_line}: START {open_name!r} is never ended")
        problems.extend(_prefix_problems(rel, in_file))
    for name, found in sorted(markers.items()):
        if len(found) > 1:
            where = ", ".join(f"{m.path}:{m.start_line}" for m in found)
            problems.append(f"marker {name!r} is defined {len(found)} times: {where} "
                            "(names must be unique across the repository)")
    return markers, problems


def _read_options(lines: list[str], start: int, rst: bool) -> list[tuple[str, str]]:
    """Options of the directive whose first line is lines[start - 1]."""
    options = []
    i = start
    if not rst and i < len(lines) and lines[i].strip() == "---":  # YAML option block
        i += 1
        while i < len(lines) and lines[i].strip() != "---":
            match = YAML_OPTION_RE.match(lines[i])
            if match:
                options.append((match.group(1), match.group(2)))
            i += 1
        return options
    while i < len(lines):
        match = OPTION_RE.match(lines[i])
        if match is None:
            break
        options.append((match.group(1), match.group(2)))
        i += 1
    return options


def collect_uses(root: Path, docs_dir: Path) -> list[Use]:
    """Every literalinclude in docs_dir/**/*.md (outside _build)."""
    uses = []
    for doc in sorted(docs_dir.rglob("*.md")):
        rel_doc = doc.relative_to(root)
        if _skipped(rel_doc) or doc.relative_to(docs_dir) in NOT_PAGES:
            continue
        lines = doc.read_text(encoding="utf-8").splitlines()
        for number, text in enumerate(lines, start=1):
            match = DIRECTIVE_RE.match(text)
            if match is None:
                continue
            rst = match.group(1) is None
            argument = match.group(2)
            # Sphinx resolves a leading "/" against the source directory.
            base = docs_dir if argument.startswith("/") else doc.parent
            target = Path(base, argument.lstrip("/")).resolve()
            try:
                rel_target = target.relative_to(root.resolve())
            except ValueError:
                rel_target = target
            options = _read_options(lines, number, rst)
            uses.append(Use(rel_doc, number, rel_target, tuple(options)))
    return uses


def check(root: Path, docs_dir: Path | None = None) -> list[str]:
    """All problems, one message each; empty when code and docs agree."""
    root = root.resolve()
    docs_dir = (docs_dir or root / "docs").resolve()
    markers, problems = collect_markers(root)
    used: set[str] = set()
    for use in collect_uses(root, docs_dir):
        where = f"{use.doc}:{use.line}"
        options = dict(use.options)
        for key in sorted(FORBIDDEN_OPTIONS & options.keys()):
            problems.append(f"{where}: literalinclude uses :{key}:; select code only with "
                            f"{KEYWORD} markers")
        start, end = options.get("start-after"), options.get("end-before")
        if start is None or end is None:
            problems.append(f"{where}: literalinclude of {use.target} without both :start-after: "
                            "and :end-before: markers")
            continue
        start_match, end_match = OPTION_VALUE_RE.fullmatch(start), OPTION_VALUE_RE.fullmatch(end)
        if (start_match is None or start_match.group(1) != "START" or end_match is None
                or end_match.group(1) != "END"):
            problems.append(f"{where}: :start-after: must be '{KEYWORD} START: NAME' and "
                            f":end-before: '{KEYWORD} END: NAME', got {start!r} and {end!r}")
            continue
        name = start_match.group(2)
        if end_match.group(2) != name:
            problems.append(f"{where}: :start-after: names {name!r} but :end-before: names "
                            f"{end_match.group(2)!r}")
            continue
        used.add(name)
        if not (root / use.target).is_file():
            problems.append(f"{where}: literalinclude of {use.target}, which does not exist")
            continue
        found = markers.get(name, [])
        if not found:
            problems.append(f"{where}: marker {name!r} is used by the docs but missing in the code "
                            f"(expected in {use.target})")
        elif all(m.path != use.target for m in found):
            elsewhere = ", ".join(str(m.path) for m in found)
            problems.append(f"{where}: marker {name!r} is not in {use.target} but in {elsewhere}")
    for name, found in sorted(markers.items()):
        if name not in used:
            m = found[0]
            problems.append(f"{m.path}:{m.start_line}: marker {name!r} is not used by any chapter "
                            "under docs/")
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    problems = check(root)
    if problems:
        print(f"{len(problems)} documentation marker problem(s):")
        for problem in problems:
            print(f"  {problem}")
        return 1
    markers, _ = collect_markers(root.resolve())
    print(f"documentation markers: {len(markers)} pairs, all used, all well formed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
