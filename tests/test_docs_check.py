"""tools/docs_check.py on tiny sites made here: the checks themselves with
pages read from disk, then the same checks through headless Chromium (the
rendered DOM, including what a page's scripts add). `make docs-check` runs
the tool on the real site."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import docs_check  # noqa: E402

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4"
    "890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")


def read_from_disk(path: Path) -> str:
    return path.read_text()


def page(body: str) -> str:
    return f"<!DOCTYPE html><html><head><title>t</title></head><body>{body}</body></html>"


def make_site(root: Path, pages: dict[str, str]) -> Path:
    (root / "img").mkdir(parents=True, exist_ok=True)
    (root / "img" / "dot.png").write_bytes(PNG_1x1)
    for rel, body in pages.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page(body))
    return root


def good_pages() -> dict[str, str]:
    return {
        "index.html": '<h1 id="top">Home</h1><a href="chapters/a.html#usage">a</a>'
                      '<a href="https://example.org/x">out</a><a href="#top">up</a>'
                      '<img src="img/dot.png" alt="dot">'
                      '<div class="highlight"><pre>print(1)</pre></div>',
        "chapters/a.html": '<h1 id="a">A</h1><section id="usage">u</section>'
                           '<a href="../index.html">home</a><a href="./">dir</a>',
        "chapters/index.html": "<p>a directory index</p>",
    }


def problems(site: Path, render=read_from_disk) -> list[str]:
    return docs_check.check_site(site, render).problems


def test_good_site_passes_and_lists_external_links(tmp_path):
    site = make_site(tmp_path, good_pages())
    report = docs_check.check_site(site, read_from_disk)
    assert report.problems == []
    assert report.pages == 3
    assert report.external == {"https://example.org/x"}


@pytest.mark.parametrize("body, expected", [
    ('<a href="chapters/missing.html">x</a>', "broken link 'chapters/missing.html'"),
    ('<a href="chapters/a.html#nowhere">x</a>',
     "broken anchor 'chapters/a.html#nowhere' (no id 'nowhere' in chapters/a.html)"),
    ('<a href="#nowhere">x</a>', "broken anchor '#nowhere'"),
    ('<a href="../outside.html">x</a>', "link '../outside.html' leaves the site"),
    ('<img src="img/missing.png">', "image 'img/missing.png' is missing"),
    ('<img src="https://example.org/logo.png">', "comes from the network"),
    ('<link rel="stylesheet" href="_static/gone.css">', "missing stylesheet or script"),
    ('<div class="highlight"><pre>  \n </pre></div>', "code block 1 is empty"),
    ('<div class="highlight"><pre><span></span></pre></div>', "code block 1 is empty"),
])
def test_each_defect_fails(tmp_path, body, expected):
    pages = good_pages()
    pages["bad.html"] = body
    found = problems(make_site(tmp_path, pages))
    assert any(expected in p for p in found), found
    assert all(p.startswith("bad.html: ") for p in found)


def test_broken_image_file_fails(tmp_path):
    site = make_site(tmp_path, good_pages())
    (site / "img" / "dot.png").write_bytes(b"not a png")
    assert problems(site) == ["index.html: image 'img/dot.png' is not a PNG"]


SVG_OK = ('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8">'
          '<rect width="8" height="8"/></svg>')


@pytest.mark.parametrize("svg, expected", [
    (SVG_OK, None),
    ('<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>', "is not valid SVG (mismatched tag"),
    # No namespace: well-formed XML that a browser does not show as an image.
    ('<svg width="8" height="8"><rect width="8" height="8"/></svg>', "is not an SVG image"),
    ("", "is empty"),
])
def test_svg_figures_are_checked(tmp_path, svg, expected):
    pages = good_pages()
    pages["figure.html"] = '<img src="img/figure.svg" alt="a figure">'
    site = make_site(tmp_path, pages)
    (site / "img" / "figure.svg").write_text(svg)
    found = problems(site)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith("figure.html: image 'img/figure.svg' ")
        assert expected in found[0], found


def test_images_a_browser_cannot_decode_fail(tmp_path):
    """The images that pass the file checks go to `load_images` once each,
    and each page that shows one it could not decode fails."""
    pages = good_pages()
    pages["chapters/b.html"] = '<img src="../img/dot.png"><img src="../img/figure.svg">'
    site = make_site(tmp_path, pages)
    (site / "img" / "figure.svg").write_text(SVG_OK)
    asked = []

    def load_images(images: list[Path]) -> set[Path]:
        asked.append([image.name for image in images])
        return {image for image in images if image.name == "dot.png"}

    report = docs_check.check_site(site, read_from_disk, load_images=load_images)
    assert asked == [["dot.png", "figure.svg"]]
    assert report.images_decoded == 1
    assert sorted(report.problems) == [
        "chapters/b.html: image '../img/dot.png' does not load in Chromium",
        "index.html: image 'img/dot.png' does not load in Chromium"]


def test_page_that_cannot_be_loaded_fails(tmp_path):
    site = make_site(tmp_path, good_pages())

    def failing(path: Path) -> str:
        if path.name == "a.html":
            raise RuntimeError("Chromium could not load the page")
        return read_from_disk(path)

    found = problems(site, failing)
    assert "chapters/a.html: Chromium could not load the page" in found


STATIC_HEAD = '<meta name="docs-check" content="static">'


def test_static_pages_are_read_from_disk_and_checked(tmp_path):
    pages = good_pages()
    site = make_site(tmp_path, pages)
    (site / "code.html").write_text(
        f"<!DOCTYPE html><html><head>{STATIC_HEAD}</head><body>"
        '<p id="L1">x</p><a href="#L1">1</a><a href="index.html#top">home</a>'
        '<a href="chapters/a.html#gone">bad</a></body></html>')
    rendered = []

    def render(path: Path) -> str:
        rendered.append(path.name)
        return read_from_disk(path)

    report = docs_check.check_site(site, render)
    assert "code.html" not in rendered and sorted(rendered) == ["a.html", "index.html", "index.html"]
    assert (report.pages, report.static_pages) == (3, 1)
    assert report.problems == ["code.html: broken anchor 'chapters/a.html#gone' "
                               "(no id 'gone' in chapters/a.html)"]


def test_a_static_page_with_a_script_is_rendered(tmp_path):
    site = make_site(tmp_path, good_pages())
    (site / "code.html").write_text(f"<html><head>{STATIC_HEAD}</head><body>{SCRIPTED}</body></html>")
    report = docs_check.check_site(site, read_from_disk)
    assert (report.pages, report.static_pages) == (4, 0)


# The same site through the browser. CI installs Chromium before `make test`
# (.ci/run); elsewhere these skip with the reason when it is missing.
CHROMIUM = docs_check.find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="Chromium not installed (apt-get install chromium); CI installs it")
# `make sanitize` preloads libasan into every process, Chromium included, which
# then prints the page but never exits; no accinte code runs in these tests.
chromium_not_under_sanitizer = pytest.mark.not_under_sanitizer(
    "Chromium with libasan preloaded prints the page but never exits (accinte code is not involved)")

SCRIPTED = ('<a href="#made-by-script">x</a>'
            '<script>document.body.insertAdjacentHTML("beforeend",'
            '"<p id=\'made-by-script\'>added</p>")</script>')


@needs_chromium
@chromium_not_under_sanitizer
def test_chromium_renders_the_dom_that_is_checked(tmp_path):
    pages = good_pages()
    pages["scripted.html"] = SCRIPTED
    site = make_site(tmp_path, pages)
    # The anchor exists only once the page's script ran: the file alone lacks it.
    assert any("made-by-script" in p for p in problems(site))
    assert problems(site, docs_check.chromium_renderer(CHROMIUM)) == []


@needs_chromium
@chromium_not_under_sanitizer
def test_chromium_decodes_the_images(tmp_path):
    """Files that pass the checks on disk but that no browser can show: a PNG
    whose signature is right and whose data is not."""
    (tmp_path / "good.png").write_bytes(PNG_1x1)
    (tmp_path / "good.svg").write_text(SVG_OK)
    (tmp_path / "corrupt.png").write_bytes(PNG_1x1[:16] + b"garbage" * 8)
    assert docs_check.image_problem(tmp_path / "corrupt.png") is None
    loader = docs_check.chromium_image_loader(CHROMIUM)
    images = [tmp_path / name for name in ("good.png", "good.svg", "corrupt.png")]
    assert loader(images) == {tmp_path / "corrupt.png"}
    assert loader([]) == set()


@needs_chromium
@chromium_not_under_sanitizer
def test_cli_fails_on_a_broken_link_and_passes_without_it(tmp_path):
    pages = good_pages()
    pages["chapters/b.html"] = '<a href="gone.html#x">gone</a><a href="a.html#usage">ok</a>'
    site = make_site(tmp_path, pages)
    tool = [sys.executable, str(REPO / "tools" / "docs_check.py"), str(site)]
    bad = subprocess.run(tool, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "chapters/b.html: broken link 'gone.html#x'" in bad.stdout
    assert "https://example.org/x" in bad.stdout  # listed, not a failure
    (site / "chapters" / "b.html").unlink()
    good = subprocess.run(tool, capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "3 pages rendered by Chromium, 1 image decoded" in good.stdout


def test_cli_without_a_site_says_how_to_build_it(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "tools" / "docs_check.py"), str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "run `make docs` first" in out.stdout
