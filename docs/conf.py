"""Sphinx configuration of the torch_accinte documentation.

`make docs` builds the site into docs/_build/html with warnings as errors.
Chapters are MyST Markdown files in chapters/; code enters them only through
literalinclude between LITERALINCLUDE markers, which tools/check_doc_markers.py
checks against the sources.
"""

project = "torch_accinte"
author = "the torch_accinte developers"
copyright = "the torch_accinte developers"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# README.md describes this folder for people browsing the repository; it is
# not a page of the site.
exclude_patterns = ["_build", "README.md"]

# Headings up to level 3 get anchors, so chapters can link to sections with
# [text](other.md#section-title) and the build checks those links.
myst_heading_anchors = 3
# ::: fences for directives and admonitions, besides ``` fences.
myst_enable_extensions = ["colon_fence"]

# A theme shipped with Sphinx: nothing is fetched at build or view time.
html_theme = "alabaster"
html_theme_options = {
    "description": "A PyTorch PrivateUse1 accelerator, emulated on the CPU",
    "fixed_sidebar": True,
    "page_width": "1200px",
    "sidebar_width": "240px",
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
