"""The code's Notes: where each `Note [Title]` is written, found in the sources
at build time, so the index page and the links to it cannot drift.

A Note is defined, as in PyTorch, by a comment line holding nothing but
`Note [Title]` followed by more comment (usually an underline of `~`), or in
Python by a docstring that opens with it. The same words on a line followed by
code are a citation, not a definition."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .repo import Repository

# Sources Notes are written in.
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp", ".py", ".cmake", ".sh", ".txt", ".toml"}
_DEFINITION = re.compile(r"^\s*(?://+|#|/\*+|\*)\s*Note \[([^\]]+)\]\s*:?\s*$")
_COMMENT = re.compile(r"^\s*(?://|#|\*|/\*)")
_UNDERLINE = re.compile(r"^\s*(?://+|#|\*)\s*[~=\-]{3,}\s*$")
_DOCSTRING = re.compile(r'^\s*[rR]?"""Note \[([^\]]+)\]\s*$')
# A citation in prose: the words may run across a line break.
MENTION = re.compile(r"Note\s+\[([^\]]+)\]")


@dataclass(frozen=True)
class Note:
    title: str
    path: str  # posix, relative to the repository root
    line: int

    @property
    def anchor(self) -> str:
        """The id of the Note's row on the index page."""
        return "note-" + re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


def normalize(title: str) -> str:
    """A title as cited across a line break (one space between words), with
    the typographic apostrophe MyST's smart quotes put in prose made plain."""
    return " ".join(title.replace("\u2019", "'").split())


def find_notes(repo: Repository) -> dict[str, Note]:
    """Every Note defined in the repository's sources, by title. A title
    defined twice keeps the definition with an underline, else the first."""
    found: dict[str, tuple[bool, Note]] = {}
    for path in sorted(repo.files):
        suffix = PurePosixPath(path).suffix
        if suffix not in SOURCE_SUFFIXES and PurePosixPath(path).name != "Makefile":
            continue
        if path.startswith("docs/"):
            continue
        try:
            lines = Path(repo.root, path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, text in enumerate(lines, start=1):
            match = _DOCSTRING.match(text) if suffix == ".py" else None
            underlined = match is not None  # a docstring is as explicit as an underline
            if match is None:
                match = _DEFINITION.match(text)
                if match is None or number >= len(lines) or not _COMMENT.match(lines[number]):
                    continue
                underlined = bool(_UNDERLINE.match(lines[number]))
            title = normalize(match.group(1))
            known = found.get(title)
            if known is None or (underlined and not known[0]):
                found[title] = (underlined, Note(title, path, number))
    return {title: note for title, (_, note) in sorted(found.items(), key=_sort_key)}


def _sort_key(item: tuple[str, tuple[bool, Note]]) -> str:
    return item[0].lower()
