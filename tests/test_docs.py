"""The documentation: the marker check (tools/check_doc_markers.py) on small
trees made here and on the repository, and the Sphinx build with warnings as
errors. `make docs` builds the same site into docs/_build/html."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import check_doc_markers  # noqa: E402

K = "LITERALINCLUDE"  # spelt apart so this file holds no marker lines itself


def cpp_pair(name: str, body: str = "int x = 1;") -> str:
    return f"// {K} START: {name}\n{body}\n// {K} END: {name}\n"


def py_pair(name: str, body: str = "x = 1") -> str:
    return f"# {K} START: {name}\n{body}\n# {K} END: {name}\n"


def include(path: str, name: str, language: str = "cpp") -> str:
    return (f"```{{literalinclude}} {path}\n:language: {language}\n"
            f":start-after: {K} START: {name}\n:end-before: {K} END: {name}\n```\n")


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def good_files() -> dict[str, str]:
    return {
        "csrc/a.cpp": "#include <x>\n" + cpp_pair("ALPHA") + "int y;\n" + cpp_pair("SECOND ALPHA"),
        "pkg/b.py": "import os\n" + py_pair("BETA"),
        "CMakeLists.txt": py_pair("BUILD GAMMA", "add_library(x)"),
        "docs/chapters/one.md": "# One\n\n" + include("../../csrc/a.cpp", "ALPHA")
        + "\ntext\n\n" + include("../../pkg/b.py", "BETA", "python"),
        # The YAML option block form and a path from the source directory.
        "docs/chapters/two.md": textwrap.dedent(f"""\
            # Two

            ```{{literalinclude}} /../csrc/a.cpp
            ---
            language: cpp
            start-after: {K} START: SECOND ALPHA
            end-before: {K} END: SECOND ALPHA
            ---
            ```
            """) + include("../../CMakeLists.txt", "BUILD GAMMA", "cmake"),
    }


def problems_of(tmp_path: Path, files: dict[str, str]) -> str:
    return "\n".join(check_doc_markers.check(make_tree(tmp_path, files)))


def test_agreeing_tree_passes(tmp_path):
    assert problems_of(tmp_path, good_files()) == ""
    markers, _ = check_doc_markers.collect_markers(tmp_path)
    assert sorted(markers) == ["ALPHA", "BETA", "BUILD GAMMA", "SECOND ALPHA"]
    assert markers["ALPHA"][0].start_line == 2 and markers["ALPHA"][0].end_line == 4


def test_marker_used_by_docs_but_missing_in_code_fails(tmp_path):
    files = good_files()
    files["docs/chapters/three.md"] = "# Three\n\n" + include("../../csrc/a.cpp", "DELTA")
    out = problems_of(tmp_path, files)
    assert "docs/chapters/three.md:3: marker 'DELTA' is used by the docs but missing in the code" in out


def test_marker_in_another_file_than_the_docs_say_fails(tmp_path):
    files = good_files()
    files["docs/chapters/one.md"] = files["docs/chapters/one.md"].replace("../../pkg/b.py",
                                                                          "../../csrc/a.cpp")
    out = problems_of(tmp_path, files)
    assert "marker 'BETA' is not in csrc/a.cpp but in pkg/b.py" in out


def test_included_file_that_does_not_exist_fails(tmp_path):
    files = good_files()
    files["docs/chapters/one.md"] = files["docs/chapters/one.md"].replace("../../pkg/b.py",
                                                                          "../../pkg/gone.py")
    assert "literalinclude of pkg/gone.py, which does not exist" in problems_of(tmp_path, files)


def test_marker_not_used_by_any_chapter_fails(tmp_path):
    files = good_files()
    files["pkg/c.py"] = py_pair("UNUSED THING")
    out = problems_of(tmp_path, files)
    assert "pkg/c.py:1: marker 'UNUSED THING' is not used by any chapter" in out
    assert out.count("\n") == 0  # nothing else is wrong


@pytest.mark.parametrize("body, expected", [
    (f"// {K} END: ALPHA\nint a;\n// {K} START: ALPHA\n",
     "x.cpp:1: END 'ALPHA' without a START before it"),
    (f"// {K} START: OUTER\n// {K} START: INNER\nint a;\n// {K} END: INNER\n// {K} END: OUTER\n",
     "x.cpp:2: START 'INNER' inside pair 'OUTER' opened at line 1"),
    (f"// {K} START: ONE\nint a;\n// {K} START: TWO\nint b;\n// {K} END: ONE\n// {K} END: TWO\n",
     "x.cpp:3: START 'TWO' inside pair 'ONE'"),
    (f"// {K} START: OPEN\nint a;\n", "x.cpp:1: START 'OPEN' is never ended"),
    (f"// {K} START: HOLLOW\n// {K} END: HOLLOW\n", "x.cpp:1: pair 'HOLLOW' encloses no lines"),
    (f"// {K} START: lower case\nint a;\n// {K} END: lower case\n",
     "x.cpp:1: malformed marker line"),
    (f"// {K} START ALPHA\nint a;\n", "x.cpp:1: malformed marker line"),
])
def test_malformed_pairs_fail(tmp_path, body, expected):
    files = good_files()
    files["csrc/x.cpp"] = body
    assert expected in problems_of(tmp_path, files)


def test_duplicate_names_fail(tmp_path):
    files = good_files()
    files["pkg/dup.py"] = py_pair("BETA")
    out = problems_of(tmp_path, files)
    assert "marker 'BETA' is defined 2 times: pkg/b.py:2, pkg/dup.py:1" in out


def test_a_name_that_starts_another_in_the_same_file_fails(tmp_path):
    # Sphinx's :start-after: takes the first line containing its text, so
    # "START: ALPHA" would also select "START: ALPHA TWO" if that came first.
    files = good_files()
    files["csrc/a.cpp"] = cpp_pair("ALPHA TWO") + cpp_pair("ALPHA") + cpp_pair("SECOND ALPHA")
    files["docs/chapters/three.md"] = "# Three\n\n" + include("../../csrc/a.cpp", "ALPHA TWO")
    out = problems_of(tmp_path, files)
    assert out == ("csrc/a.cpp:4: marker 'ALPHA' is a prefix of 'ALPHA TWO' (line 1) in the same "
                   "file; Sphinx matches :start-after: and :end-before: as substrings, so rename one")


def test_a_name_that_starts_another_in_another_file_passes(tmp_path):
    files = good_files()
    files["pkg/c.py"] = py_pair("ALPHABET")
    files["docs/chapters/three.md"] = "# Three\n\n" + include("../../pkg/c.py", "ALPHABET", "python")
    assert problems_of(tmp_path, files) == ""


@pytest.mark.parametrize("options, expected", [
    (":lines: 3-5\n", "literalinclude uses :lines:"),
    (f":start-after: {K} START: ALPHA\n", "without both :start-after: and :end-before:"),
    (f":start-after: int x\n:end-before: {K} END: ALPHA\n", ":start-after: must be"),
    (f":start-after: {K} START: ALPHA\n:end-before: {K} END: ALPHA TWO\n",
     ":start-after: names 'ALPHA' but :end-before: names 'ALPHA TWO'"),
])
def test_literalinclude_must_select_by_markers(tmp_path, options, expected):
    files = good_files()
    files["docs/chapters/three.md"] = f"# Three\n\n```{{literalinclude}} ../../csrc/a.cpp\n{options}```\n"
    assert expected in problems_of(tmp_path, files)


def test_eval_rst_literalinclude_is_checked(tmp_path):
    files = good_files()
    files["docs/chapters/three.md"] = textwrap.dedent(f"""\
        # Three

        ```{{eval-rst}}
        .. literalinclude:: ../../csrc/a.cpp
           :start-after: {K} START: EPSILON
           :end-before: {K} END: EPSILON
        ```
        """)
    assert "marker 'EPSILON' is used by the docs but missing" in problems_of(tmp_path, files)


def test_build_outputs_and_environments_are_not_scanned(tmp_path):
    files = good_files()
    for skipped in (".venv/lib/x.py", "build/gen.cpp", "docs/_build/html/_sources/y.py",
                    "sub/__pycache__/z.py"):
        files[skipped] = py_pair("SKIPPED")
    files["docs/_build/html/copy.md"] = include("../../../../csrc/a.cpp", "MISSING")
    # docs/README.md shows how to include code; it is not a page of the site.
    files["docs/README.md"] = "# docs\n\n````md\n" + include("../../csrc/a.cpp", "MISSING") + "````\n"
    assert problems_of(tmp_path, files) == ""


def test_cli_exit_status_and_listing(tmp_path):
    files = good_files()
    files["pkg/c.py"] = py_pair("UNUSED THING")
    make_tree(tmp_path, files)
    tool = REPO / "tools" / "check_doc_markers.py"
    bad = subprocess.run([sys.executable, str(tool), str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert "1 documentation marker problem(s):" in bad.stdout
    assert "'UNUSED THING' is not used" in bad.stdout
    (tmp_path / "pkg/c.py").unlink()
    good = subprocess.run([sys.executable, str(tool), str(tmp_path)], capture_output=True, text=True)
    assert good.returncode == 0, good.stdout
    assert "4 pairs, all used, all well formed" in good.stdout


def test_repository_docs_and_code_agree_on_markers():
    problems = check_doc_markers.check(REPO)
    assert not problems, "documentation markers disagree with the code:\n" + "\n".join(problems)


def test_docs_build_without_warnings(tmp_path):
    """The same build as `make docs` (-W: any warning fails), into tmp_path."""
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "--keep-going", "-q",
         str(REPO / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, "sphinx-build failed:\n" + result.stdout + result.stderr
    assert (tmp_path / "html" / "index.html").is_file()
    assert (tmp_path / "html" / "chapters" / "overview.html").is_file()


def test_readme_is_a_front_page():
    """README.md stays a newcomer's page: short, with the platform, the two
    commands and the license; its usage example is examples/usage.py, which
    tests/test_examples.py runs."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 220, "README.md: move detail into a chapter"
    for needed in ("Linux only", "make demo", "make test", "requirements-build.txt",
                   "requirements-test.txt", "tools/new_backend.py", "[LICENSE](LICENSE)"):
        assert needed in readme, needed
    assert (REPO / "LICENSE").read_text().startswith("BSD 3-Clause License")
    usage = (REPO / "examples" / "usage.py").read_text().split("\n", 1)[1]
    assert f"```python\n{usage}```" in readme, "README's usage example differs from examples/usage.py"


def overview_tree() -> list[str]:
    """The paths of the file tree in docs/chapters/overview.md, from the root
    (entries that list several files are split at the commas)."""
    text = (REPO / "docs" / "chapters" / "overview.md").read_text()
    block = text.split("### The file tree", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    paths, stack = [], []
    for line in block.splitlines()[1:]:
        match = re.match(r"^([│ ]*)[├└]── ([^\s,]+(?:, [^\s,]+)*)", line)
        if match is None:
            continue
        depth = len(match.group(1)) // 4
        del stack[depth:]
        names = match.group(2).split(", ")
        for name in names:
            paths.append("/".join(stack + [name]).rstrip("/"))
        stack.append(names[-1].rstrip("/"))
    return paths


TREE_DEPTHS = (("csrc", 2), ("torch_accinte", 2), ("tests", 1), ("third_party/accinte", 1))


def test_overview_file_tree_matches_the_repository():
    listed = overview_tree()
    missing = [path for path in listed if not (REPO / path).exists()]
    assert not missing, f"overview.md's tree names what does not exist: {missing}"
    # Every folder down to the depth the tree shows, under the trees it details.
    folders = [top for top, _ in TREE_DEPTHS]
    for top, depth in TREE_DEPTHS:
        for level in range(1, depth + 1):
            folders += [path.relative_to(REPO).as_posix()
                        for path in (REPO / top).glob("/".join(["*"] * level))
                        if path.is_dir() and not {"__pycache__", "lib"} & set(path.parts)]
    unlisted = sorted({f for f in folders if f not in listed
                       and not any(entry.startswith(f + "/") for entry in listed)})
    assert not unlisted, f"folders missing from overview.md's tree: {unlisted}"


def test_overview_names_every_binding_file():
    text = (REPO / "docs" / "chapters" / "overview.md").read_text()
    paragraph = text.split("`libtorch_bindings.so` (`torch_accinte/csrc/`)", 1)[1].split("\n\n")[0]
    named = set(re.findall(r"`(\w+\.cpp)`", paragraph))
    present = {path.name for path in (REPO / "torch_accinte" / "csrc").glob("*.cpp")}
    assert named == present, f"named {sorted(named - present)}, missing {sorted(present - named)}"
