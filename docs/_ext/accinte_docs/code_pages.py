"""The site's own read-only view of the repository, written under `_code/`
when no `accinte_code_url` is configured: one page per file (highlighted,
every line an anchor `#L<n>`, each `Note [...]` it cites linked to where the
Note is written) and one per folder (its files, then its README).

The pages carry no script and say so (`<meta name="docs-check"
content="static">`), so tools/docs_check.py checks their markup as written
instead of starting a browser for each of them."""

from __future__ import annotations

import html
import posixpath
import re
from pathlib import Path, PurePosixPath

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer, CppLexer, TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound
from sphinx.application import Sphinx

from . import notes as notes_mod
from .urls import code_page

MAX_BYTES = 512 * 1024  # larger files are listed, not shown
_NOTE_IN_HTML = re.compile(r"Note\s+\[([^\]<]+)\]")
# An #include's file as Pygments marks it: <csrc/runtime/AccInteStream.h>, "runtime.h".
_INCLUDE_IN_HTML = re.compile(r'(<span class="cpf">)(&lt;|&quot;|")([^&<"]+)(&gt;|&quot;|")(</span>)')

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="docs-check" content="static">
<title>{title} · {project}</title>
<link rel="stylesheet" href="{root}_static/pygments.css">
<link rel="stylesheet" href="{root}_static/accinte-code.css">
</head>
<body>
<nav class="crumbs"><a href="{root}index.html">{project} guide</a> · {crumbs}</nav>
{body}
</body>
</html>
"""


def _lexer(path: str, text: str):
    name = PurePosixPath(path).name
    if name.endswith((".h", ".hpp")):
        return CppLexer(stripnl=False)
    try:
        return get_lexer_for_filename(name, stripnl=False)
    except ClassNotFound:
        if text.startswith("#!") and "sh" in text.split("\n", 1)[0]:
            return BashLexer(stripnl=False)
        return TextLexer(stripnl=False)


class _Writer:
    def __init__(self, app: Sphinx) -> None:
        self.app = app
        self.state = app.accinte_docs
        self.out = Path(app.outdir)
        self.project = html.escape(app.config.project)

    def _rel(self, page: str, target: str) -> str:
        return posixpath.relpath(target, posixpath.dirname(page))

    def _crumbs(self, page: str, path: str, is_dir: bool) -> str:
        parts = [f'<a href="{self._rel(page, code_page("", True))}">repository</a>']
        walked = []
        names = path.split("/") if path else []
        for number, name in enumerate(names):
            walked.append(name)
            last = number == len(names) - 1
            if last and not is_dir:
                parts.append(f"<b>{html.escape(name)}</b>")
            else:
                link = self._rel(page, code_page("/".join(walked), True))
                parts.append(f'<a href="{link}">{html.escape(name)}</a>')
        return " / ".join(parts)

    def _write(self, page: str, title: str, crumbs: str, body: str) -> None:
        root = "../" * page.count("/")
        target = self.out / page
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_PAGE.format(title=html.escape(title), project=self.project, root=root,
                                       crumbs=crumbs, body=body), encoding="utf-8")

    def _link_notes(self, page: str, path: str, number: int, line: str) -> str:
        def replace(match: re.Match) -> str:
            note = self.state.notes.get(notes_mod.normalize(html.unescape(match.group(1))))
            if note is None:
                return match.group(0)
            if (note.path, note.line) == (path, number):  # the definition: its index row
                notes = self.app.builder.get_target_uri(self.app.config.accinte_notes_page)
                href = f"{self._rel(page, notes)}#{note.anchor}"
            else:
                href = f"{self._rel(page, code_page(note.path, False))}#L{note.line}"
            return f'<a class="note" href="{href}">{match.group(0)}</a>'

        return _NOTE_IN_HTML.sub(replace, line)

    def _link_includes(self, page: str, path: str, line: str) -> str:
        def replace(match: re.Match) -> str:
            name = html.unescape(match.group(3))
            files = self.state.repo.files
            here = posixpath.normpath(posixpath.join(posixpath.dirname(path), name))
            target = name if name in files else here if here in files else None
            if target is None:
                return match.group(0)
            href = self._rel(page, code_page(target, False))
            return (f'{match.group(1)}{match.group(2)}<a href="{href}">{match.group(3)}</a>'
                    f"{match.group(4)}{match.group(5)}")

        return _INCLUDE_IN_HTML.sub(replace, line)

    def _source(self, page: str, path: str, text: str) -> str:
        if not text:
            return '<p class="empty">(an empty file)</p>'
        formatted = highlight(text, _lexer(path, text), HtmlFormatter(nowrap=True))
        lines = []
        for number, line in enumerate(formatted.rstrip("\n").split("\n"), start=1):
            line = self._link_includes(page, path, self._link_notes(page, path, number, line))
            # The line feed inside the line's block: between blocks it would
            # show as an empty line of its own.
            lines.append(f'<span class="line" id="L{number}"><a class="ln" href="#L{number}">'
                         f"{number}</a>{line}\n</span>")
        return '<div class="highlight"><pre>' + "".join(lines) + "</pre></div>"

    def _shown_in(self, page: str, path: str) -> str:
        docs = sorted(self.app.env.accinte_includes.get(path, ()))
        if not docs:
            return ""
        links = []
        for doc in docs:
            title = self.app.env.titles[doc].astext() if doc in self.app.env.titles else doc
            href = self._rel(page, self.app.builder.get_target_uri(doc))
            links.append(f'<a href="{href}">{html.escape(title)}</a>')
        return f'<p class="shown-in">Excerpts shown in: {", ".join(links)}</p>\n'

    def file(self, path: str) -> None:
        page = code_page(path, False)
        source = self.state.repo.root / path
        try:
            if source.stat().st_size > MAX_BYTES:
                text = None
                body = f"<p>{html.escape(path)}: too large to show here.</p>"
            else:
                text = source.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            text, body = None, f"<p>{html.escape(path)} is not text.</p>"
        except OSError:
            text, body = None, f"<p>{html.escape(path)} was removed during the build.</p>"
        if text is not None:
            body = self._source(page, path, text)
        heading = f"<h1>{html.escape(path)}</h1>\n" + self._shown_in(page, path)
        self._write(page, path, self._crumbs(page, path, False), heading + body)

    def folder(self, path: str) -> None:
        page = code_page(path, True)
        repo = self.state.repo
        prefix = path + "/" if path else ""
        subdirs = sorted(d for d in repo.dirs if d and posixpath.dirname(d) == path)
        files = sorted(f for f in repo.files if posixpath.dirname(f) == path)
        items = [f'<li><a href="{self._rel(page, code_page(d, True))}">'
                 f"{html.escape(d[len(prefix):])}/</a></li>" for d in subdirs]
        items += [f'<li><a href="{self._rel(page, code_page(f, False))}">'
                  f"{html.escape(f[len(prefix):])}</a></li>" for f in files]
        title = (path + "/") if path else "the repository"
        body = f"<h1>{html.escape(title)}</h1>\n<ul class=\"listing\">\n" + "\n".join(items)
        body += "\n</ul>\n"
        readme = prefix + "README.md"
        if readme in repo.files and (repo.root / readme).is_file():
            text = (repo.root / readme).read_text(encoding="utf-8", errors="replace")
            body += f"<h2>{html.escape(readme)}</h2>\n" + self._source(page, readme, text)
        self._write(page, title, self._crumbs(page, path, True), body)


def write(app: Sphinx, exception: Exception | None) -> None:
    """build-finished: the code view, for HTML builds without a code URL."""
    if exception is not None or app.builder.format != "html" or app.config.accinte_code_url:
        return
    writer = _Writer(app)
    for path in sorted(app.accinte_docs.repo.files):
        writer.file(path)
    for path in sorted(app.accinte_docs.repo.dirs):
        writer.folder(path)
