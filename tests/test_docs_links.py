"""The guide's Sphinx extension (docs/_ext/accinte_docs): what an inline
literal names in the repository, which comment lines define a Note, and a
small site built with it (paths and Notes as links, captions, the Notes page,
the code view, warnings for a Note or a path that does not exist)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "docs" / "_ext"))

from accinte_docs import notes, repo  # noqa: E402

K = "LITERALINCLUDE"  # spelt apart so this file holds no marker lines itself


def make_repo(files: dict[str, str]) -> repo.Repository:
    return repo.Repository(Path("/nowhere"), frozenset(files))


def test_literals_that_name_files_and_folders():
    r = make_repo({"csrc/runtime/AccInteStream.h": "", "csrc/runtime/AccInteStream.cpp": "",
                   "Makefile": "", "README.md": "", "tools/README.md": "", "tools/sz.py": ""})
    assert r.resolve("csrc/runtime/AccInteStream.cpp") == repo.Target(
        "csrc/runtime/AccInteStream.cpp", False)
    assert r.resolve("csrc/runtime/AccInteStream.cpp:120") == repo.Target(
        "csrc/runtime/AccInteStream.cpp", False, 120)
    assert r.resolve("tools/sz.py:12-30").line == 12
    assert r.resolve("csrc/runtime/AccInteStream.{h,cpp}").path == "csrc/runtime/AccInteStream.h"
    assert r.resolve("csrc/runtime/") == repo.Target("csrc/runtime", True)
    assert r.resolve("csrc/runtime") == repo.Target("csrc/runtime", True)
    assert r.resolve("Makefile") == repo.Target("Makefile", False)
    # The end of a path counts when one file or folder ends so; a bare name
    # only for a file with a dot in its name.
    assert r.resolve("runtime/AccInteStream.cpp").path == "csrc/runtime/AccInteStream.cpp"
    assert r.resolve("sz.py:3") == repo.Target("tools/sz.py", False, 3)
    assert r.resolve("runtime/") == repo.Target("csrc/runtime", True)
    assert r.resolve("README.md") is None and r.resolve("csrc") is None
    assert r.resolve("runtime") is None
    for not_a_path in ("torch.accinte.Stream()", "csrc/*.cpp", "csrc/runtime/<name>.h",
                       "$ACCINTE_LIBRARY", "torch/library.h", "a b"):
        assert r.resolve(not_a_path) is None, not_a_path


def test_a_pytest_node_id_points_at_the_test(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("import os\n\n\ndef test_y():\n    pass\n")
    r = repo.scan(tmp_path)
    assert r.resolve("tests/test_x.py::test_y") == repo.Target("tests/test_x.py", False, 4)
    assert r.resolve("tests/test_x.py::test_gone") == repo.Target("tests/test_x.py", False)


def test_paths_into_the_repository_that_name_nothing():
    r = make_repo({"csrc/runtime/AccInteStream.cpp": "", "tools/sz.py": ""})
    assert r.looks_like_a_missing_path("csrc/runtime/AccInteGone.cpp")
    assert r.looks_like_a_missing_path("tools/gone/")
    assert not r.looks_like_a_missing_path("csrc/runtime/AccInteStream.cpp")
    # Another tree, a pattern, a build output, a bare name: not claims about this one.
    for other in ("torch/csrc/Module.cpp", "csrc/*.h", "torch_accinte/lib/libaccinte.so",
                  "gone.py", "csrc/x.{h,cpp}"):
        assert not r.looks_like_a_missing_path(other), other


def test_a_note_is_defined_by_a_line_of_its_own_followed_by_comment(tmp_path):
    (tmp_path / "a.cpp").write_text(textwrap.dedent("""\
        // Note [accinte first]
        // ~~~~~~~~~~~~~~~~~~~~
        // The text.
        int x;  // see Note [accinte first]
          // Note [accinte first]
          f();
        /* Note [accinte block]
         * A C comment.
         */
        """))
    (tmp_path / "b.py").write_text("# Note [accinte python's]\n# Its text.\n\n\n"
                                   'def f():\n    """Note [accinte docstring]\n\n    Text.\n    """\n')
    found = notes.find_notes(repo.scan(tmp_path))
    assert {title: (n.path, n.line) for title, n in found.items()} == {
        "accinte block": ("a.cpp", 7), "accinte first": ("a.cpp", 1),
        "accinte python's": ("b.py", 1), "accinte docstring": ("b.py", 6)}
    assert found["accinte python's"].anchor == "note-accinte-python-s"
    assert notes.normalize("accinte\n  python\u2019s") == "accinte python's"


def site_files(chapter: str) -> dict[str, str]:
    return {
        "csrc/a.cpp": textwrap.dedent(f"""\
            // Note [accinte example]
            // ~~~~~~~~~~~~~~~~~~~~~~
            // Why the code is so.
            // {K} START: EXAMPLE
            int answer() {{ return 42; }}  // see Note [accinte example]
            // {K} END: EXAMPLE
            """),
        "docs/conf.py": textwrap.dedent(f"""\
            import sys
            sys.path.insert(0, {str(REPO / "docs" / "_ext")!r})
            extensions = ["myst_parser", "accinte_docs"]
            exclude_patterns = ["_build"]
            """),
        "docs/index.md": "# Site\n\n```{toctree}\nchapters/one\nchapters/notes\n```\n",
        "docs/chapters/notes.md": "# Notes\n\n```{notes-index}\n```\n",
        "docs/chapters/one.md": chapter,
    }


def build(tmp_path: Path, chapter: str) -> subprocess.CompletedProcess:
    for rel, text in site_files(chapter).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "--keep-going", "-q",
         str(tmp_path / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=300)


def test_a_site_links_paths_notes_and_excerpts_to_the_code(tmp_path):
    chapter = textwrap.dedent(f"""\
        # One

        The answer is in `csrc/a.cpp:5`, for the reason Note [accinte
        example] gives; `csrc/` holds it.

        ```{{literalinclude}} ../../csrc/a.cpp
        :language: cpp
        :start-after: {K} START: EXAMPLE
        :end-before: {K} END: EXAMPLE
        ```
        """)
    result = build(tmp_path, chapter)
    assert result.returncode == 0, result.stdout + result.stderr
    page = (tmp_path / "html/chapters/one.html").read_text()
    assert 'href="../_code/csrc/a.cpp.html#L5"' in page
    assert 'href="../_code/csrc/index.html"' in page
    assert 'href="notes.html#note-accinte-example">Note [accinte example]</a>' in page
    # The caption names the file and links to the excerpt's first line.
    caption = page[page.index('class="code-block-caption"'):]
    assert caption.index('href="../_code/csrc/a.cpp.html#L5"') < caption.index("</div>")
    notes_page = (tmp_path / "html/chapters/notes.html").read_text()
    assert 'id="note-accinte-example"' in notes_page
    assert 'href="../_code/csrc/a.cpp.html#L1"' in notes_page and 'href="one.html"' in notes_page
    code = (tmp_path / "html/_code/csrc/a.cpp.html").read_text()
    assert 'id="L5"' in code and '<meta name="docs-check" content="static">' in code
    assert '<a class="note" href="a.cpp.html#L1">Note [accinte example]</a>' in code
    assert 'href="../../chapters/one.html"' in code  # where its excerpt is shown
    assert 'href="a.cpp.html">a.cpp</a>' in (tmp_path / "html/_code/csrc/index.html").read_text()


def test_a_note_or_a_path_that_does_not_exist_fails_the_build(tmp_path):
    result = build(tmp_path, "# One\n\nSee Note [accinte gone] and `csrc/gone.cpp`.\n")
    assert result.returncode != 0
    assert "Note [accinte gone] is defined nowhere in the sources" in result.stderr
    assert "`csrc/gone.cpp` names no file or folder of the repository" in result.stderr


def test_a_code_url_replaces_the_code_view(tmp_path):
    site_files_ok = "# One\n\nIn `csrc/a.cpp:5`.\n"
    for rel, text in site_files(site_files_ok).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "-q",
         "-D", "accinte_code_url=https://example.org/repo/blob/main/",
         str(tmp_path / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    page = (tmp_path / "html/chapters/one.html").read_text()
    assert 'href="https://example.org/repo/blob/main/csrc/a.cpp#L5"' in page
    assert not (tmp_path / "html/_code").exists()
