"""Sphinx configuration of the torch_accinte documentation.

`make docs` builds the site into docs/_build/html with warnings as errors.
Chapters are MyST Markdown files in chapters/; code enters them only through
literalinclude between LITERALINCLUDE markers, which tools/check_doc_markers.py
checks against the sources. The extension in _ext/accinte_docs/ links the site
to the code: repository paths, `Note [...]` citations and excerpt captions
become links, and the site carries a view of the sources under _code/.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "torch_accinte"
author = "the torch_accinte developers"
copyright = "the torch_accinte developers"

extensions = ["myst_parser", "accinte_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# README.md describes this folder for people browsing the repository; it is
# not a page of the site.
exclude_patterns = ["_build", "README.md", "_ext"]

# Headings up to level 3 get anchors, so chapters can link to sections with
# [text](other.md#section-title) and the build checks those links.
myst_heading_anchors = 3
# ::: fences for directives and admonitions, besides ``` fences.
myst_enable_extensions = ["colon_fence"]

# Furo (pinned in requirements-test.txt): a maintained theme whose content
# column is wide and whose tables scroll sideways, so interface tables keep
# identifiers such as `rename_privateuse1_backend` whole (see
# _static/accinte.css). Its assets ship in the wheel: nothing is fetched at
# build or view time.
html_theme = "furo"
html_theme_options = {
    "sidebar_hide_name": False,
    "navigation_with_keys": True,
}
html_title = "torch_accinte"
html_static_path = ["_static"]
html_css_files = ["accinte.css"]
html_show_sourcelink = False
html_copy_source = False

# Cross references to things Sphinx cannot resolve (C++ and Python API names
# used in prose) are not errors; broken links between pages and to headings
# are, through -W.
nitpicky = False

# Where links to repository files go (_ext/accinte_docs/urls.py). Empty: the
# site's own view of the sources, which tools/docs_check.py follows offline.
# A published site may point at the repository's web view instead:
#   make docs SPHINXOPTS="-D accinte_code_url=https://github.com/OWNER/torch_accinte/blob/main/"
accinte_code_url = ""
accinte_notes_page = "chapters/notes"
# PyTorch's own Notes that chapters cite by name: not in this repository.
accinte_upstream_notes = {
    "Acquire lock when using random generators": "ATen/core/Generator.h",
}
# Pages that name files of the starter backend tools/new_backend.py writes,
# which are not in this tree: their paths are not checked for existence.
accinte_other_trees = ["chapters/new-backend"]
