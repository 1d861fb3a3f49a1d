"""What turns a chapter's text into links to the code.

- An inline code literal that names a repository file or folder
  (`csrc/runtime/AccInteStream.cpp`, `tools/`, `stream.cpp:120`) becomes a
  link to it (urls.py says where); a literal that reads as a path into the
  repository but names nothing is a build warning, so a renamed file cannot
  leave a stale path behind.
- `Note [Title]` in prose becomes a link to the Note's row on the Notes page;
  a Note no source defines is a warning (PyTorch's own Notes are listed in
  `accinte_upstream_notes`).
- Every literalinclude gets its file as caption, linked to the excerpt's
  first line.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.directives.code import LiteralInclude
from sphinx.util import logging

from . import notes as notes_mod
from .urls import repo_url

logger = logging.getLogger(__name__)

# Where a literal or a Note citation is left as it is: already a link, a
# heading (the table of contents would nest links), code blocks.
_NOT_LINKED = (nodes.reference, nodes.title, nodes.subtitle, nodes.literal_block,
               nodes.raw, nodes.comment, nodes.target)


def _inside(node: nodes.Node, kinds: tuple[type, ...]) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, kinds):
            return True
        parent = parent.parent
    return False


def _state(app: Sphinx):
    return app.accinte_docs  # set by __init__.py at builder-inited


class CaptionedLiteralInclude(LiteralInclude):
    """literalinclude whose caption names the file, linked to the excerpt."""

    def run(self) -> list[nodes.Node]:
        state = _state(self.env.app)
        _, filename = self.env.relfn2path(self.arguments[0])
        try:
            path = Path(filename).resolve().relative_to(state.repo.root.resolve()).as_posix()
        except ValueError:
            return super().run()
        explicit = "caption" in self.options
        if not explicit:
            self.options["caption"] = path
        result = super().run()
        self.env.accinte_includes.setdefault(path, set()).add(self.env.docname)
        if explicit:
            return result
        first = _first_line(Path(filename), self.options.get("start-after"))
        for node in result:
            if isinstance(node, nodes.container) and node.get("literal_block"):
                caption = node.next_node(nodes.caption)
                if caption is not None:
                    literal = nodes.literal(path, path)
                    literal["repo_line"] = first
                    caption.children = []
                    caption += literal
        return result


def _first_line(file: Path, start_after: str | None) -> int:
    """The file's line number of an excerpt's first line: the line after the
    first one containing `start_after` (Sphinx's rule), else 1."""
    if not start_after:
        return 1
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    for number, text in enumerate(lines, start=1):
        if start_after in text:
            return number + 1
    return 1


def _text_runs(element: nodes.Element):
    """Runs of adjacent Text children of `element`, as lists (MyST gives a
    soft line break its own Text node, and a citation may span one)."""
    run: list[nodes.Node] = []
    for child in element.children:
        if isinstance(child, nodes.Text):
            run.append(child)
            continue
        if run:
            yield run
        run = []
        yield [child]
    if run:
        yield run


def _prose(doctree: nodes.document):
    """Every element whose text is prose a citation may sit in."""
    for element in doctree.findall(nodes.TextElement):
        if not isinstance(element, _NOT_LINKED + (nodes.literal,)) \
                and not _inside(element, _NOT_LINKED):
            yield element


def collect(app: Sphinx, doctree: nodes.document) -> None:
    """doctree-read: the Notes a chapter cites; warnings for Notes and
    repository paths that do not exist."""
    state = _state(app)
    # The Notes page cites a Note as an example; it is not a chapter citing it.
    cited = (set() if app.env.docname == app.config.accinte_notes_page
             else app.env.accinte_note_mentions.setdefault(app.env.docname, set()))
    for element in _prose(doctree):
        for run in _text_runs(element):
            if not isinstance(run[0], nodes.Text):
                continue
            for match in notes_mod.MENTION.finditer("".join(run)):
                title = notes_mod.normalize(match.group(1))
                if title in state.notes:
                    cited.add(title)
                elif title not in app.config.accinte_upstream_notes:
                    logger.warning("Note [%s] is defined nowhere in the sources", title,
                                   location=element, type="accinte", subtype="note")
    if app.env.docname in app.config.accinte_other_trees:
        return
    for literal in doctree.findall(nodes.literal):
        if _inside(literal, _NOT_LINKED):
            continue
        if state.repo.looks_like_a_missing_path(literal.astext()):
            logger.warning("`%s` names no file or folder of the repository", literal.astext(),
                           location=literal, type="accinte", subtype="path")


def _linked_notes(run: list[nodes.Node], uri_of) -> list[nodes.Node] | None:
    """`run` (adjacent Text nodes) with each cited Note made a link, or None
    when it cites none that exists."""
    text = "".join(run)
    new: list[nodes.Node] = []
    end = 0
    for match in notes_mod.MENTION.finditer(text):
        uri = uri_of(notes_mod.normalize(match.group(1)))
        if uri is None:
            continue
        if match.start() > end:
            new.append(nodes.Text(text[end:match.start()]))
        new.append(nodes.reference("", " ".join(match.group(0).split()), refuri=uri,
                                   internal=True, classes=["note-link"]))
        end = match.end()
    if not new:
        return None
    if end < len(text):
        new.append(nodes.Text(text[end:]))
    return new


def link(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """doctree-resolved: Note citations and repository paths become links."""
    state = _state(app)
    page = app.builder.get_target_uri(docname)
    notes_uri = app.builder.get_relative_uri(docname, app.config.accinte_notes_page)

    def note_uri(title: str) -> str | None:
        note = state.notes.get(title)
        return None if note is None else f"{notes_uri}#{note.anchor}"

    for element in list(_prose(doctree)):
        children: list[nodes.Node] = []
        changed = False
        for run in _text_runs(element):
            new = _linked_notes(run, note_uri) if isinstance(run[0], nodes.Text) else None
            changed |= new is not None
            children.extend(run if new is None else new)
        if changed:
            element.clear()
            element.extend(children)
    docs = {f"docs/{name}.md": name for name in app.env.found_docs}
    for literal in list(doctree.findall(nodes.literal)):
        if _inside(literal, _NOT_LINKED):
            continue
        target = state.repo.resolve(literal.astext())
        if target is None:
            continue
        if not target.is_dir and target.path in docs:
            uri = app.builder.get_relative_uri(docname, docs[target.path])
        else:
            line = literal.get("repo_line") or target.line
            uri = repo_url(app.config.accinte_code_url, page, target.path, target.is_dir, line)
        reference = nodes.reference("", "", refuri=uri, internal=not app.config.accinte_code_url,
                                    classes=["repo-link"])
        literal.replace_self(reference)
        reference += literal
