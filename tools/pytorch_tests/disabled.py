"""Skips and expected failures: PyTorch's disabled-tests file with typed reasons.

The file is the JSON PyTorch reads from DISABLED_TESTS_FILE (`--import-disabled-tests`,
`.pytorch-disabled-tests.json`): an object whose keys name a test and its class as
unittest prints them, and whose values are `[reason, platforms]`:

    {"test_map_ (__main__.TestTorchDeviceTypeACCINTE)":
        ["xfail assumes-cpu: Tensor.map_ is implemented for CPU tensors only", []]}

PyTorch puts an issue URL where the reason is; here it is a typed reason,
`ACTION KIND[ ISSUE]: TEXT`:

- ACTION `skip` (the test is not run: it crashes or hangs) or `xfail` (it runs and
  is expected to fail; a pass is reported as fixed);
- KIND `assumes-cuda` (the test expects what CUDA does), `assumes-cpu` (what only the
  CPU does), or `backend` (the backend's own limitation), which needs ISSUE: `#29`,
  `owner/repo#29` or an issue URL.

A key matches as in PyTorch's check_if_enable: the class by prefix (so
`TestFoo` names every device's class, `TestFooACCINTE` only the backend's), the
test by its full name (`test_bar_accinte`, `test_bar_accinte_float32`) or, when
the name ends in a dtype, by the name without the device and dtype
(`test_bar` for every dtype of test_bar).
PyTorch itself can read the same file (it skips every entry), so one file serves
this runner and `python test_foo.py --import-disabled-tests FILE`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ACTIONS = ("skip", "xfail")
KINDS = ("assumes-cuda", "assumes-cpu", "backend")
_REASON = re.compile(r"^(?P<action>\w+) (?P<kind>[\w-]+)(?: (?P<issue>\S+))?: (?P<text>\S.*)$",
                     re.DOTALL)
_ISSUE = re.compile(r"^(#\d+|[\w.-]+/[\w.-]+#\d+|https?://\S+)$")
_KEY = re.compile(r"^\w+ \((?:[\w.]+\.)?\w+\)$")


@dataclass(frozen=True)
class Entry:
    """One entry of the file: the test it names and its typed reason."""
    key: str        # "test_name (__main__.TestClass)"
    action: str     # one of ACTIONS
    kind: str       # one of KINDS
    issue: str      # "" unless kind is "backend"
    text: str
    platforms: tuple[str, ...]

    @property
    def reason(self) -> str:
        issue = f" {self.issue}" if self.issue else ""
        return f"{self.action} {self.kind}{issue}: {self.text}"


def parse_reason(key: str, reason: str) -> tuple[str, str, str, str]:
    """(action, kind, issue, text) of a reason; ValueError naming the key if it is
    not `ACTION KIND[ ISSUE]: TEXT` or a backend limitation has no issue."""
    match = _REASON.match(reason)
    if match is None:
        raise ValueError(f"{key}: reason {reason!r} is not 'ACTION KIND[ ISSUE]: TEXT'")
    action, kind = match["action"], match["kind"]
    issue = match["issue"] or ""
    if action not in ACTIONS:
        raise ValueError(f"{key}: action {action!r} is not one of {', '.join(ACTIONS)}")
    if kind not in KINDS:
        raise ValueError(f"{key}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind == "backend" and not _ISSUE.match(issue):
        raise ValueError(f"{key}: a backend limitation names its issue (#N, owner/repo#N "
                         f"or a URL), got {issue or 'none'}")
    if kind != "backend" and issue:
        raise ValueError(f"{key}: only a backend limitation names an issue")
    return action, kind, issue, match["text"]


def load(path: str | Path | None) -> list[Entry]:
    """The entries of a disabled-tests file (none for None); ValueError on a
    malformed key, value or reason."""
    if path is None:
        return []
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of test -> [reason, platforms]")
    where = f"{path}: "
    entries = []
    for key, value in data.items():
        if not _KEY.match(key):
            raise ValueError(f"{where}{key!r}: expected 'test_name (module.TestClass)'")
        if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str)
                or not isinstance(value[1], list)):
            raise ValueError(f"{where}{key}: expected [reason, platforms]")
        action, kind, issue, text = parse_reason(where + key, value[0])
        entries.append(Entry(key, action, kind, issue, text, tuple(value[1])))
    return entries


def as_pytorch_json(entries: list[Entry]) -> dict[str, list]:
    """The entries in PyTorch's form, for the child's configuration."""
    return {entry.key: [entry.reason, list(entry.platforms)] for entry in entries}


def by_key(entries: list[Entry]) -> dict[str, Entry]:
    return {entry.key: entry for entry in entries}
