#!/usr/bin/env python3
"""Opens every page of the built documentation in headless Chromium and
checks what a reader would hit.

Each HTML page under SITE is loaded by Chromium (``--dump-dom``: the DOM after
the page's scripts ran) and the result is parsed with html.parser. The check
fails on:

- a link to a page or file that is not in the site, or to an anchor (``#id``)
  that the target page does not have;
- an image whose file is missing, empty or not an image (an SVG must be XML
  whose root is ``<svg>`` in the SVG namespace); an image from the network
  (the docs ship their images);
- an image that Chromium cannot decode: every image the pages show is loaded
  in one probe page, which records each image's ``load`` or ``error`` event;
- a stylesheet or script of the page that is missing;
- an empty code block (e.g. a literalinclude whose markers enclose nothing);
- a page Chromium cannot load.

Links to http(s) and other schemes are listed, never followed: the check runs
offline.

A page that declares itself static (``<meta name="docs-check"
content="static">``) and holds no script is read from disk instead: without
scripts, the DOM Chromium builds is the markup as written. The site's code view
(``_code/``, one page per repository file) is made of such pages, and starting
a browser for each of its hundreds of pages would only repeat the parse.

Usage: ``python tools/docs_check.py [SITE]`` (default docs/_build/html).
``$CHROMIUM`` names the browser binary; otherwise ``chromium`` (Debian's
package) or ``chromium-browser`` is taken from PATH.
"""

from __future__ import annotations

from html import escape
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlsplit

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--disable-extensions", "--mute-audio",
]
PAGE_TIMEOUT_S = 60
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
# Elements whose text Sphinx/Pygments render as a code block.
CODE_BLOCK_CLASSES = {"highlight", "literal-block-wrapper"}


@dataclass
class Page:
    """What the rendered DOM of one page holds."""

    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)  # <a href>
    images: list[str] = field(default_factory=list)  # <img src>
    assets: list[str] = field(default_factory=list)  # <link href>, <script src>
    code_blocks: list[str] = field(default_factory=list)  # text of each <pre>


class _DomParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._pre_depth = 0
        self._pre_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        if values.get("id"):
            self.page.ids.add(values["id"])
        if tag == "a" and values.get("name"):
            self.page.ids.add(values["name"])
        if tag == "a" and "href" in values:
            self.page.links.append(values["href"])
        elif tag == "img":
            self.page.images.append(values.get("src", ""))
        elif tag == "link" and values.get("href") and "stylesheet" in values.get("rel", ""):
            self.page.assets.append(values["href"])
        elif tag == "script" and values.get("src"):
            self.page.assets.append(values["src"])
        elif tag == "pre":
            if self._pre_depth == 0:
                self._pre_text = []
            self._pre_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self._pre_depth > 0:
            self._pre_depth -= 1
            if self._pre_depth == 0:
                self.page.code_blocks.append("".join(self._pre_text))

    def handle_data(self, data: str) -> None:
        if self._pre_depth > 0:
            self._pre_text.append(data)


def parse_dom(html: str) -> Page:
    parser = _DomParser()
    parser.feed(html)
    parser.close()
    return parser.page


def find_chromium() -> str | None:
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_renderer(binary: str) -> Callable[[Path], str]:
    """A function that returns the DOM of a local page after Chromium loaded it.
    Each call runs its own browser with a throwaway profile, so calls may run
    in parallel."""

    def render(path: Path) -> str:
        with tempfile.TemporaryDirectory(prefix="docs-check-chromium-") as profile:
            result = subprocess.run(
                [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                 path.resolve().as_uri()],
                capture_output=True, text=True, timeout=PAGE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        if result.returncode != 0 or "<html" not in result.stdout.lower():
            tail = "\n".join(result.stderr.strip().splitlines()[-5:])
            raise RuntimeError(f"Chromium could not load the page (exit {result.returncode}): "
                               f"{tail}")
        return result.stdout

    return render


def image_problem(path: Path) -> str | None:
    """Why the file at `path` cannot be shown as an image, or None."""
    if not path.is_file():
        return "missing"
    data = path.read_bytes()
    if not data:
        return "empty"
    suffix = path.suffix.lower()
    if suffix == ".png" and not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "not a PNG"
    if suffix in (".jpg", ".jpeg") and not data.startswith(b"\xff\xd8"):
        return "not a JPEG"
    if suffix == ".gif" and not data.startswith((b"GIF87a", b"GIF89a")):
        return "not a GIF"
    if suffix == ".svg":
        try:
            root = ElementTree.fromstring(data)
        except ElementTree.ParseError as e:
            return f"not valid SVG ({e})"
        if root.tag != f"{{{SVG_NAMESPACE}}}svg":  # a browser shows nothing then
            return (f"not an SVG image (its root is <{root.tag}>, "
                    f'not <svg xmlns="{SVG_NAMESPACE}">)')
    return None


def chromium_image_loader(binary: str) -> Callable[[list[Path]], set[Path]]:
    """A function that loads images in Chromium and returns those it could not
    decode. One probe page holds them all; each image's load or error handler
    marks it in the DOM that Chromium prints once the page (and with it every
    image) has loaded."""
    render = chromium_renderer(binary)

    def failing(images: list[Path]) -> set[Path]:
        if not images:
            return set()
        with tempfile.TemporaryDirectory(prefix="docs-check-images-") as folder:
            probe = Path(folder) / "images.html"
            probe.write_text("<!DOCTYPE html><html><body>" + "".join(
                f'<img id="image-{n}" src="{escape(path.resolve().as_uri())}" '
                'onload="this.dataset.decoded=this.naturalWidth>0?1:0" '
                'onerror="this.dataset.decoded=0">' for n, path in enumerate(images))
                + "</body></html>")
            dom = render(probe)
        decoded = set()
        for tag in re.findall(r"<img\b[^>]*>", dom):
            number = re.search(r'id="image-(\d+)"', tag)
            if number and 'data-decoded="1"' in tag:
                decoded.add(int(number.group(1)))
        return {path for n, path in enumerate(images) if n not in decoded}

    return failing


def is_static(html: str) -> bool:
    """Whether a page declares itself static and has no script to run."""
    lowered = html.lower()
    return ('<meta name="docs-check" content="static">' in lowered
            and "<script" not in lowered)


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    external: set[str] = field(default_factory=set)
    pages: int = 0  # pages rendered by `render`
    static_pages: int = 0  # static pages read from disk
    images_decoded: int = 0  # distinct images a browser decoded (with `load_images`)


def _local_target(site: Path, page: Path, url: str) -> tuple[Path, str] | None:
    """The file a relative URL of `page` points to and its fragment; None for
    URLs with a scheme or a network location."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return None
    if not parts.path:
        return page, unquote(parts.fragment)
    target = (page.parent / unquote(parts.path)).resolve()
    if target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)


def check_site(site: Path, render: Callable[[Path], str], jobs: int = 1,
               load_images: Callable[[list[Path]], set[Path]] | None = None) -> Report:
    """Renders every page of `site` with `render` (`jobs` at a time) and checks
    links, anchors, images, assets and code blocks; with `load_images` (which
    returns the images it could not decode), also that every image decodes."""
    site = site.resolve()
    report = Report()
    paths = [path for path in sorted(site.rglob("*.html"))
             if path.relative_to(site).parts[0] not in ("_static", "_sources")]

    def load(path: Path) -> Page | str:
        try:
            return parse_dom(render(path))
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            return f"{path.relative_to(site)}: {e}"

    pages: dict[Path, Page] = {}
    rendered = []
    for path in paths:
        markup = path.read_text(encoding="utf-8", errors="replace")
        if is_static(markup):
            pages[path] = parse_dom(markup)
        else:
            rendered.append(path)
    report.static_pages = len(pages)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for path, loaded in zip(rendered, pool.map(load, rendered)):
            if isinstance(loaded, str):
                report.problems.append(loaded)
            else:
                pages[path] = loaded
    report.pages = len(pages) - report.static_pages

    shown: dict[Path, list[str]] = {}  # image -> "page: image 'src'" of each use
    for path, page in pages.items():
        rel = path.relative_to(site)
        for url in page.links:
            if url.startswith(("javascript:", "data:")):
                continue
            local = _local_target(site, path, url)
            if local is None:
                report.external.add(url)
                continue
            target, fragment = local
            if site != target and site not in target.parents:
                report.problems.append(f"{rel}: link {url!r} leaves the site")
            elif not target.exists():
                report.problems.append(f"{rel}: broken link {url!r} (no {target.relative_to(site)})")
            elif fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if fragment not in ids:
                    report.problems.append(f"{rel}: broken anchor {url!r} "
                                           f"(no id {fragment!r} in {target.relative_to(site)})")
        for src in page.images:
            if src.startswith("data:"):
                continue
            local = _local_target(site, path, src)
            if local is None:
                report.problems.append(f"{rel}: image {src!r} comes from the network")
                continue
            why = image_problem(local[0])
            if why:
                report.problems.append(f"{rel}: image {src!r} is {why}")
            else:
                shown.setdefault(local[0], []).append(f"{rel}: image {src!r}")
        for src in page.assets:
            local = _local_target(site, path, src)
            if local is None:
                report.external.add(src)
            elif not local[0].is_file():
                report.problems.append(f"{rel}: missing stylesheet or script {src!r}")
        for number, text in enumerate(page.code_blocks, start=1):
            if not text.strip():
                report.problems.append(f"{rel}: code block {number} is empty")
    if load_images is not None:
        failed = load_images(sorted(shown))
        report.images_decoded = len(shown) - len(failed)
        for image in sorted(failed):
            report.problems += [f"{use} does not load in Chromium" for use in shown[image]]
    return report


def main(argv: list[str]) -> int:
    site = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "docs/_build/html"
    if not (site / "index.html").is_file():
        print(f"docs-check: no built site at {site} (run `make docs` first)")
        return 1
    binary = find_chromium()
    if binary is None:
        print("docs-check: Chromium not found; install Debian's `chromium` package or set $CHROMIUM")
        return 1
    report = check_site(site, chromium_renderer(binary), jobs=min(4, os.cpu_count() or 1),
                        load_images=chromium_image_loader(binary))
    if report.external:
        print(f"external links (listed, not followed): {len(report.external)}")
        for url in sorted(report.external):
            print(f"  {url}")
    pages = f"{report.pages} pages rendered by Chromium"
    if report.static_pages:
        pages += f" and {report.static_pages} static pages read from disk"
    decoded = report.images_decoded
    pages += f", {decoded} image{'' if decoded == 1 else 's'} decoded"
    if report.problems:
        print(f"docs-check: {len(report.problems)} problem(s) in {pages}:")
        for problem in report.problems:
            print(f"  {problem}")
        return 1
    print(f"docs-check: {pages}, no broken links, images or empty code blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
