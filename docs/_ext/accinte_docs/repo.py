"""The repository as the site sees it: which files and folders exist, and what
an inline code literal of a chapter names among them.

The list comes from git (tracked files and untracked ones git does not
ignore), so build outputs never become pages; outside a git checkout the tree
is walked, skipping the same folders the marker check skips."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

# Folders never part of the repository's pages (outside git, where
# .gitignore cannot say so).
SKIP_NAMES = {".git", ".venv", "venv", "build", "build-asan", "_build", "__pycache__",
              ".pytest_cache", "node_modules"}
SKIP_SUFFIXES = {".so", ".pyc", ".whl"}

# `path`, `path:12`, `path:12-30`, `path:12,40`: a line suffix points at its first line;
# `tests/test_x.py::test_y` (a pytest node id) at the test's `def`.
_WITH_LINE = re.compile(r"^(?P<path>[^\s:]+?)(?::(?P<line>\d+)(?:[-,]\d+)*"
                        r"|::(?P<test>\w+)(?:::\w+)?)?$")
_BRACES = re.compile(r"\{([^{}]*)\}")
# Characters that make a literal a pattern or a placeholder, not a path.
_NOT_A_PATH = re.compile(r"[*?<>|$\[\]]|\.\.\.")


@dataclass(frozen=True)
class Target:
    """A repository file or folder a literal names, with the line it points at."""

    path: str  # posix, relative to the root; "" is the root itself
    is_dir: bool
    line: int | None = None


@dataclass
class Repository:
    root: Path
    files: frozenset[str]
    dirs: frozenset[str] = field(init=False)
    _basenames: Counter = field(init=False)

    def __post_init__(self) -> None:
        dirs = {""}
        for path in self.files:
            parent = PurePosixPath(path).parent
            while str(parent) != ".":
                dirs.add(str(parent))
                parent = parent.parent
        self.dirs = frozenset(dirs)
        self._basenames = Counter(PurePosixPath(path).name for path in self.files)

    @property
    def top_level(self) -> set[str]:
        return {path.split("/", 1)[0] for path in self.dirs if path}

    def resolve(self, text: str) -> Target | None:
        """The file or folder `text` names, or None. Forms: `a/b.cpp`, `a/b/`,
        `a/b.cpp:12`, `a/B.{h,cpp}` (the first alternative that exists). The
        end of a path (`native/Copy.cpp`, `stream.cpp`, `emulation/fallback/`)
        counts when exactly one file or folder ends so; a name without a slash
        only for a file, and only one with a dot or at the root (`Makefile`)."""
        match = _WITH_LINE.match(text.strip())
        if match is None or _NOT_A_PATH.search(match["path"]):
            return None
        line = int(match["line"]) if match["line"] else None
        for candidate in _expand_braces(match["path"]):
            path = candidate.rstrip("/")
            if path.startswith("./"):
                path = path[2:]
            found = self._find(path, bare="/" not in candidate, line=line)
            if found is not None and match["test"]:
                return Target(found.path, False, self._line_of_test(found.path, match["test"]))
            if found is not None:
                return found
        return None

    def _line_of_test(self, path: str, name: str) -> int | None:
        try:
            lines = (self.root / path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return None
        definition = re.compile(rf"^\s*(?:async\s+)?def {re.escape(name)}\(")
        return next((n for n, text in enumerate(lines, 1) if definition.match(text)), None)

    def _find(self, path: str, bare: bool, line: int | None) -> Target | None:
        if path in self.files and (not bare or self._basenames[path] == 1):
            return Target(path, False, line)
        if not bare and path in self.dirs and line is None:
            return Target(path, True)
        if not path or (bare and "." not in path):
            return None
        files = self._ending(path, self.files)
        if len(files) == 1:
            return Target(files[0], False, line)
        if bare or files or line is not None:
            return None
        dirs = self._ending(path, self.dirs)
        return Target(dirs[0], True) if len(dirs) == 1 else None

    @staticmethod
    def _ending(tail: str, paths: frozenset[str]) -> list[str]:
        return [path for path in paths if path == tail or path.endswith("/" + tail)]

    def looks_like_a_missing_path(self, text: str) -> bool:
        """Whether `text` reads as a path into one of the repository's top-level
        folders (`csrc/...`, `tests/...`) that names nothing: a renamed or
        deleted file the chapter still names."""
        match = _WITH_LINE.match(text.strip())
        if match is None or _NOT_A_PATH.search(match["path"]) or "{" in match["path"]:
            return False
        path = match["path"].rstrip("/")
        first = path.split("/", 1)[0]
        if "/" not in path or first not in self.top_level:
            return False
        if PurePosixPath(path).suffix in SKIP_SUFFIXES:
            return False  # a build output: `torch_accinte/lib/libaccinte.so`
        return self.resolve(text) is None


def _expand_braces(path: str) -> list[str]:
    match = _BRACES.search(path)
    if match is None:
        return [path]
    head, tail = path[:match.start()], path[match.end():]
    return [expanded for choice in match.group(1).split(",")
            for expanded in _expand_braces(head + choice + tail)]


def _git_files(root: Path) -> list[str] | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return [name for name in result.stdout.decode("utf-8", "replace").split("\0") if name]


def _walked_files(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in SKIP_NAMES for part in rel.parts) or path.name.endswith(".egg-info"):
            continue
        if path.is_file():
            found.append(rel.as_posix())
    return found


def scan(root: Path) -> Repository:
    """Every file of the repository at `root` that exists now (a deleted file
    git still tracks is left out), without build outputs."""
    names = _git_files(root)
    if names is None:
        names = _walked_files(root)
    files = {name for name in names
             if PurePosixPath(name).suffix not in SKIP_SUFFIXES
             and not name.startswith("docs/_build/")
             and (root / name).is_file()}
    return Repository(root, frozenset(files))
