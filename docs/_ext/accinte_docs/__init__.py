"""Sphinx extension of the torch_accinte guide: the site leads to the code.

| file | does |
|---|---|
| `repo.py` | the repository's files and folders; what an inline literal names |
| `urls.py` | where a link to a file goes: `accinte_code_url`, else the site's code view |
| `links.py` | repository paths and `Note [...]` citations become links; literalinclude captions |
| `notes.py` | the Notes the sources define, found at build time |
| `notes_index.py` | the `{notes-index}` directive of the Notes page |
| `code_pages.py` | the code view under `_code/` |

Configuration (conf.py, or `-D name=value` on sphinx-build's command line):

- `accinte_repo_root`: the repository (default: the folder above conf.py's);
- `accinte_code_url`: the repository's web view, e.g.
  `https://github.com/OWNER/torch_accinte/blob/main/`; empty (the default):
  the site carries its own view of the sources and every link stays inside it;
- `accinte_notes_page`: the page holding `{notes-index}`;
- `accinte_upstream_notes`: PyTorch's Notes the chapters cite by name (not
  linked, not warned about);
- `accinte_other_trees`: pages whose paths may name files of another tree
  (the starter backend tools/new_backend.py writes): paths that exist here
  are linked, the others are not warned about.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sphinx.application import Sphinx

from . import code_pages, links, notes, notes_index
from .repo import Repository, scan


@dataclass
class State:
    repo: Repository
    notes: dict[str, notes.Note]


def _init(app: Sphinx) -> None:
    root = Path(app.config.accinte_repo_root or Path(app.confdir).parent).resolve()
    repo = scan(root)
    app.accinte_docs = State(repo, notes.find_notes(repo))
    for name in ("accinte_note_mentions", "accinte_includes"):
        if not hasattr(app.env, name):
            setattr(app.env, name, {})


def _purge(app: Sphinx, env, docname: str) -> None:
    env.accinte_note_mentions.pop(docname, None)
    for docs in env.accinte_includes.values():
        docs.discard(docname)


def _merge(app: Sphinx, env, docnames, other) -> None:
    for docname in docnames:
        if docname in other.accinte_note_mentions:
            env.accinte_note_mentions[docname] = other.accinte_note_mentions[docname]
    for path, docs in other.accinte_includes.items():
        env.accinte_includes.setdefault(path, set()).update(docs & set(docnames))


def _resolved(app: Sphinx, doctree, docname: str) -> None:
    notes_index.fill(app, doctree, docname)
    links.link(app, doctree, docname)


def setup(app: Sphinx) -> dict:
    app.add_config_value("accinte_repo_root", "", "env")
    app.add_config_value("accinte_code_url", "", "env")
    app.add_config_value("accinte_notes_page", "chapters/notes", "env")
    app.add_config_value("accinte_upstream_notes", {}, "env")
    app.add_config_value("accinte_other_trees", [], "env")
    app.add_directive("literalinclude", links.CaptionedLiteralInclude, override=True)
    app.add_directive("notes-index", notes_index.NotesIndex)
    app.add_node(notes_index.notes_index)
    app.connect("builder-inited", _init)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("doctree-read", links.collect)
    app.connect("doctree-resolved", _resolved)
    app.connect("build-finished", code_pages.write)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
