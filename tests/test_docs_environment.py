"""docs/chapters/environment.md against the sources: every ACCINTE_* and
ACCL_* variable the code reads is on the page, the page names no variable that
nothing reads, and its defaults are the constants the code uses."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "chapters" / "environment.md"
NAME = r"(?:ACCINTE|ACCL)_[A-Z0-9_]+"
# How each kind of source reads or sets a variable: C and C++ through getenv,
# Python as a string that is nothing but the name (os.environ.get("X"), X_ENV =
# "X", env={"X": ...}), shell as an assignment or an expansion.
READS = {
    (".c", ".cc", ".cpp", ".h"): re.compile(rf'getenv\("({NAME})"\)'),
    (".py",): re.compile(rf"""["']({NAME})["']"""),
    (".sh",): re.compile(rf"\b({NAME})=|\$\{{?({NAME})\b"),
}
# Names spelt like variables that are something else: C macros and constants,
# CMake cache variables.
NOT_VARIABLES = re.compile(r"ACCINTE_(MAX_DEVICE_COUNT|IPC_HANDLE_SIZE|API|CHECK.*|QUERY|"
                           r"NODISCARD|HAS_.*|SRC_.*|ACCINTE_H_|PACKAGE_DIR|.*SOURCES)$")


def tracked_sources() -> list[Path]:
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"],
                         capture_output=True, text=True, check=True).stdout.split()
    this = Path(__file__).resolve().relative_to(REPO).as_posix()  # names them on purpose
    return [REPO / name for name in out
            if not name.startswith("docs/") and name != this and (REPO / name).is_file()]


def variables_in_code() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in tracked_sources():
        for suffixes, pattern in READS.items():
            if path.suffix not in suffixes:
                continue
            for match in pattern.finditer(path.read_text(encoding="utf-8", errors="replace")):
                name = next(group for group in match.groups() if group)
                if not NOT_VARIABLES.match(name):
                    found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


def page_rows() -> dict[str, list[str]]:
    """The table rows of the page, by the variable in their first cell."""
    rows = {}
    for line in PAGE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 1:
            for name in re.findall(rf"`({NAME})`", cells[0]):
                rows[name] = cells
    return rows


def test_every_variable_the_code_reads_is_on_the_page():
    code, rows = variables_in_code(), page_rows()
    assert "ACCINTE_STRICT" in code and "ACCL_ENGINE" in code  # the scan finds them
    missing = {name: sorted(files) for name, files in code.items() if name not in rows}
    assert not missing, f"read by the code, not in {PAGE.name}: {missing}"


def test_the_page_names_no_variable_that_nothing_reads():
    stale = sorted(set(page_rows()) - set(variables_in_code()))
    assert not stale, f"in {PAGE.name}, read by nothing: {stale}"


def constant(path: str, pattern: str) -> int:
    match = re.search(pattern, (REPO / path).read_text())
    assert match, f"{pattern!r} not in {path}"
    return eval(match.group(1), {})  # an integer literal or a shift such as 1 << 20


def test_defaults_are_the_code_s():
    config = "third_party/accinte/src/config.cpp"
    expected = {
        "ACCINTE_DEVICE_COUNT": constant(config, r"kDefaultDeviceCount = (\d+);"),
        "ACCINTE_LAUNCH_QUEUE_DEPTH": constant(config, r"kDefaultLaunchQueueDepth = (\d+);"),
        "ACCINTE_SPIN_US": constant(config, r"kDefaultSpinMicroseconds = (\d+);"),
        "ACCINTE_LAUNCH_LATENCY_US": constant(config,
                                              r"kDefaultLaunchLatencyMicroseconds = (\d+);"),
        "ACCL_SHM_SLOT_BYTES": constant("torch_accinte/distributed.py",
                                        r"DEFAULT_SLOT_BYTES = ([\d <]+)\n"),
    }
    gib = constant(config, r"kDefaultDeviceMemory = size_t\{(\d+)\} << 30;")
    rows = page_rows()
    for name, value in expected.items():
        assert rows[name][1].startswith(f"`{value}`"), (name, rows[name][1], value)
    assert rows["ACCINTE_DEVICE_MEMORY"][1] == f"`{gib}G`"
    assert "1 to 64" in rows["ACCINTE_DEVICE_COUNT"][2]
    assert constant("third_party/accinte/include/accinte/accinte.h",
                    r"#define ACCINTE_MAX_DEVICE_COUNT (\d+)") == 64
