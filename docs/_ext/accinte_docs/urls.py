"""Where a link to a repository file goes.

With `accinte_code_url` set (the repository's web view, e.g.
`https://github.com/OWNER/torch_accinte/blob/main/`), a file is
`<url><path>` and a line `#L<n>`, as GitHub and GitLab spell them. Unset (the
default), the site carries its own read-only view of the sources under
`_code/` (code_pages.py), and links stay inside the site, where
tools/docs_check.py follows every one of them."""

from __future__ import annotations

import posixpath

CODE_DIR = "_code"


def code_page(path: str, is_dir: bool) -> str:
    """The site-relative page of a repository file or folder in the code view."""
    if is_dir:
        return posixpath.join(CODE_DIR, path, "index.html") if path else f"{CODE_DIR}/index.html"
    return posixpath.join(CODE_DIR, path + ".html")


def line_anchor(line: int | None) -> str:
    return f"#L{line}" if line else ""


def repo_url(base: str, from_page: str, path: str, is_dir: bool, line: int | None) -> str:
    """The URL of `path` (at `line`) for a link on the site page `from_page`
    (a path relative to the site's root, e.g. `chapters/streams.html`)."""
    if base:
        return base.rstrip("/") + "/" + path + ("" if is_dir else line_anchor(line))
    target = code_page(path, is_dir)
    return posixpath.relpath(target, posixpath.dirname(from_page) or ".") + line_anchor(line)
