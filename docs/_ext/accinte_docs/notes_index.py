"""The `{notes-index}` directive: one table row per Note the sources define
(its title, the file and line that write it, the chapters that cite it),
filled in once every chapter has been read."""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class notes_index(nodes.General, nodes.Element):
    """Placeholder for the table, replaced at doctree-resolved."""


class NotesIndex(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        return [notes_index()]


def _entry(*children: nodes.Node) -> nodes.entry:
    entry = nodes.entry()
    entry += nodes.paragraph("", "", *children)
    return entry


def _table(app: Sphinx, docname: str) -> nodes.table:
    state = app.accinte_docs
    citing: dict[str, list[str]] = {}
    for doc, titles in sorted(app.env.accinte_note_mentions.items()):
        for title in titles:
            citing.setdefault(title, []).append(doc)
    table = nodes.table(classes=["notes-index"])
    group = nodes.tgroup(cols=3)
    table += group
    for width in (30, 35, 35):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    header = nodes.row()
    for title in ("Note", "written in", "cited by"):
        header += _entry(nodes.Text(title))
    head += header
    body = nodes.tbody()
    group += body
    for note in state.notes.values():
        row = nodes.row(ids=[note.anchor])
        where = f"{note.path}:{note.line}"
        row += _entry(nodes.strong("", note.title))
        row += _entry(nodes.literal(where, where))
        chapters: list[nodes.Node] = []
        for doc in citing.get(note.title, []):
            if chapters:
                chapters.append(nodes.Text(", "))
            uri = app.builder.get_relative_uri(docname, doc)
            title = app.env.titles[doc].astext() if doc in app.env.titles else doc
            chapters.append(nodes.reference("", title, refuri=uri, internal=True))
        row += _entry(*(chapters or [nodes.emphasis("", "the code only")]))
        body += row
    return table


def fill(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """doctree-resolved: the placeholder becomes the table."""
    for placeholder in list(doctree.findall(notes_index)):
        placeholder.replace_self(_table(app, docname))
