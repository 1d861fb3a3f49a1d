#!/usr/bin/env python3
"""Writes a starter backend for a new device from this tree.

    python tools/new_backend.py mychip DEST            # the starter: a device that trains
    python tools/new_backend.py mychip DEST --whole    # every file, the later steps too

Which files go where is the disposition table of docs/chapters/new-backend.md
(one row per file or glob: what a vendor does with it, and whether the starter
has it); this script reads that table, so the guide and the generator cannot
disagree. Every file taken is renamed in its contents and its path: the
package, the device, the module, the C API prefix of the stand-in driver, the
environment variables and the collectives library's names. The starter's own
Makefile, README and tests come from tools/new_backend/. At the end no file of
DEST may name accinte or accl: the script checks it and fails if one does.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "chapters" / "new-backend.md"
TEMPLATES = ROOT / "tools" / "new_backend"
# The folders and files a disposition row must cover (tests/test_new_backend.py).
COVERED = ("csrc/", "torch_accinte/", "third_party/")
DISPOSITIONS = ("copy and rename", "replace with your driver", "replace with your kernels",
                "drop")
# LITERALINCLUDE START: NEW BACKEND TABLE ROW
# | `csrc/runtime/*` | copy and rename | yes | why |
ROW = re.compile(r"^\|\s*((?:`[^`]+`[\s,]*)+)\|\s*([^|]+?)\s*\|\s*(yes|no)\s*\|")
# LITERALINCLUDE END: NEW BACKEND TABLE ROW


@dataclass(frozen=True)
class Disposition:
    patterns: tuple[str, ...]
    action: str   # one of DISPOSITIONS
    starter: bool  # whether the starter has the file


def read_dispositions(guide: Path = GUIDE) -> list[Disposition]:
    """The guide's disposition rows, in order (the first row that matches a
    file decides for it)."""
    rows = []
    for line in guide.read_text().splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        patterns = tuple(re.findall(r"`([^`]+)`", match.group(1)))
        action = match.group(2).split(":")[0].strip()
        if action not in DISPOSITIONS:
            raise SystemExit(f"{guide}: unknown disposition {action!r} in: {line}")
        rows.append(Disposition(patterns, action, match.group(3) == "yes"))
    return rows


def disposition_of(path: str, rows: list[Disposition]) -> Disposition | None:
    for row in rows:
        if any(fnmatch.fnmatchcase(path, pattern) for pattern in row.patterns):
            return row
    return None


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return [line for line in out.splitlines() if (ROOT / line).is_file()]


@dataclass(frozen=True)
class Names:
    """Every spelling of the new backend's name, and the rule that renames."""
    name: str         # mychip: package suffix, device, module, library
    camel: str        # MyChip: C++ class prefix (AccInteStream -> MyChipStream)
    api_prefix: str   # my: the stand-in driver's C API (acMalloc -> myMalloc)
    collectives: str  # mccl: the collectives library (accl -> mccl)

    def rename(self, text: str) -> str:
        # LITERALINCLUDE START: NEW BACKEND RENAME
        text = text.replace("AccInte", self.camel).replace("Accinte", self.name.capitalize())
        text = text.replace("ACCINTE", self.name.upper()).replace("accinte", self.name)
        text = text.replace("ACCL", self.collectives.upper()).replace("accl", self.collectives)
        text = text.replace("Accl", self.collectives.capitalize())
        # The driver's C API: acMalloc, acStream_t, acSuccess (lower-case
        # "ac" and a capital, as CUDA's cudaMalloc).
        return re.sub(r"\bac(?=[A-Z])", self.api_prefix, text)
        # LITERALINCLUDE END: NEW BACKEND RENAME


FORBIDDEN = re.compile(r"accinte|accl", re.IGNORECASE)


def check_name(name: str) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9]{1,15}", name):
        raise SystemExit(f"NAME must be 2-16 lower-case letters and digits, starting with a "
                         f"letter (a Python module and a C identifier), got {name!r}")
    if FORBIDDEN.search(name) or name in ("cpu", "cuda", "meta", "privateuseone"):
        raise SystemExit(f"NAME {name!r} is taken")


def copy_renamed(source: Path, target: Path, names: Names) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SystemExit(f"{source}: not UTF-8 text; the generator renames text only")
    target.write_text(names.rename(text))
    shutil.copymode(source, target)


def generate(names: Names, dest: Path, whole: bool) -> list[str]:
    """Writes the backend into `dest`; returns the relative paths written."""
    rows = read_dispositions()
    written = []
    for path in tracked_files():
        row = disposition_of(path, rows)
        if row is None or not (row.starter or whole):
            continue
        target = names.rename(path)
        copy_renamed(ROOT / path, dest / target, names)
        written.append(target)
    for template in sorted(TEMPLATES.rglob("*")):
        if template.is_file() and "__pycache__" not in template.parts:
            target = names.rename(str(template.relative_to(TEMPLATES)))
            copy_renamed(template, dest / target, names)
            written.append(target)
    return written


def leftovers(dest: Path) -> list[str]:
    """Files of `dest` whose path or text still names accinte or accl."""
    found = []
    for path in sorted(dest.rglob("*")):
        if path.is_file() and (FORBIDDEN.search(str(path.relative_to(dest)))
                               or FORBIDDEN.search(path.read_text(errors="replace"))):
            found.append(str(path.relative_to(dest)))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the device's name, lower case (mychip)")
    parser.add_argument("dest", type=Path, help="the folder to write (must not exist)")
    parser.add_argument("--camel", help="the C++ class prefix (default: Name, as in NameStream)")
    parser.add_argument("--api-prefix", help="the stand-in driver's C API prefix "
                        "(default: the name's first two letters)")
    parser.add_argument("--collectives", help="the collectives library's name, the "
                        "torch.distributed backend (default: the name's initial + 'ccl')")
    parser.add_argument("--whole", action="store_true",
                        help="every file the guide keeps, the profiler, torch.compile, "
                        "torch.distributed and the library integrations too")
    args = parser.parse_args(argv)
    check_name(args.name)
    if args.dest.exists():
        raise SystemExit(f"{args.dest} exists; give a new folder")
    names = Names(args.name, args.camel or args.name.capitalize(),
                  args.api_prefix or args.name[:2], args.collectives or args.name[0] + "ccl")
    written = generate(names, args.dest, args.whole)
    left = leftovers(args.dest)
    if left:
        print("still naming the reference backend:", *left, sep="\n  ", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} files into {args.dest}; next: cd {args.dest} && make test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
