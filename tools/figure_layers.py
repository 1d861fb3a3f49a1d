"""The four libraries as the build makes them: docs/chapters/img/overview-libraries.svg.

Read from the code, not drawn by hand: the CMake files give the libraries
(`add_library`, `Python_add_library`), the folders their sources come from
(the `file(GLOB ...)` patterns), what each links (`target_link_libraries`,
`target_link_options`) and the one-line role of each (the table at the top of
CMakeLists.txt); the sources' `#include <csrc/...>` lines give the arrows
between folders. A folder added, a library linked or an include that crosses
a layer shows in the picture the next time `make figures` runs.

    python tools/figures.py overview-libraries
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from figure_svg import DRIVER, GREY, HOST, PYTHON, TORCH, WIDTH, Svg, text_width

SOURCE_SUFFIXES = {".c", ".cpp", ".h"}
# How the link lines name what is not built here.
EXTERNAL_NAMES = {
    "${TORCH_LIBRARIES}": "libtorch, libc10",
    "${TORCH_PYTHON_LIBRARY}": "libtorch_python",
    "Python::Module": "Python",
    "Threads::Threads": "pthreads",
}


@dataclass
class Library:
    target: str
    cmake: Path  # the CMakeLists.txt that makes it
    sources: list[Path] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (visibility, item)
    link_options: list[str] = field(default_factory=list)
    public_includes: list[Path] = field(default_factory=list)
    role: str = ""
    output: str = ""


def cmake_commands(text: str):
    """(command, arguments) of each call in a CMake file, comments removed."""
    text = re.sub(r"#[^\n]*", "", text)
    for match in re.finditer(r"(\w+)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)", text):
        yield match.group(1).lower(), re.findall(r'"[^"]*"|[^\s"]+', match.group(2))


def expand(argument: str, directory: Path, variables: dict[str, list[Path]],
           repo: Path) -> list[Path]:
    if argument.startswith("${") and argument[2:-1] in variables:
        return variables[argument[2:-1]]
    path = argument.replace("${CMAKE_CURRENT_SOURCE_DIR}", str(directory))
    path = path.replace("${PROJECT_SOURCE_DIR}", str(repo))
    return [Path(path) if Path(path).is_absolute() else directory / path]


def read_libraries(repo: Path) -> list[Library]:
    """Every library the build makes, in the order of add_subdirectory."""
    libraries: dict[str, Library] = {}
    pending = [repo / "CMakeLists.txt"]
    while pending:
        cmake = pending.pop(0)
        directory = cmake.parent
        globs: dict[str, list[Path]] = {}
        for command, args in cmake_commands(cmake.read_text()):
            if command == "add_subdirectory":
                pending.append(directory / args[0] / "CMakeLists.txt")
            elif command == "file" and args[0] in ("GLOB", "GLOB_RECURSE"):
                patterns = [a for a in args[2:] if a != "CONFIGURE_DEPENDS"]
                found: list[Path] = []
                for pattern in patterns:
                    base = expand(pattern, directory, {}, repo)[0]
                    walk = base.parent.rglob if args[0] == "GLOB_RECURSE" else base.parent.glob
                    found += sorted(walk(base.name))
                globs[args[1]] = found
            elif command in ("add_library", "python_add_library"):
                library = libraries.setdefault(args[0], Library(args[0], cmake))
                for arg in args[1:]:
                    if arg not in ("SHARED", "STATIC", "MODULE", "WITH_SOABI"):
                        library.sources += expand(arg, directory, globs, repo)
            elif command == "target_link_libraries" and args[0] in libraries:
                visibility = "PRIVATE"
                for arg in args[1:]:
                    if arg in ("PRIVATE", "PUBLIC", "INTERFACE"):
                        visibility = arg
                    else:
                        libraries[args[0]].links.append((visibility, arg))
            elif command == "target_link_options" and args[0] in libraries:
                libraries[args[0]].link_options += [a.strip('"').removeprefix("LINKER:")
                                                    for a in args[2:]]
            elif command == "target_include_directories" and args[0] in libraries:
                visibility = ""
                for arg in args[1:]:
                    if arg in ("PRIVATE", "PUBLIC", "INTERFACE"):
                        visibility = arg
                    elif visibility == "PUBLIC":
                        path = expand(arg, directory, {}, repo)[0]
                        if path != repo:
                            libraries[args[0]].public_includes.append(path)
    read_roles(repo, libraries)
    return list(libraries.values())


def read_roles(repo: Path, libraries: dict[str, Library]) -> None:
    """The table at the top of CMakeLists.txt: `#   file.so   role   -> links`."""
    for line in (repo / "CMakeLists.txt").read_text().splitlines():
        match = re.match(r"#\s+(\S+\.so)\s+(.+?)\s+->", line)
        if not match:
            continue
        stem = Path(match.group(1)).name.removesuffix(".so")
        for library in libraries.values():
            if stem in (library.target, "lib" + library.target):
                library.role, library.output = match.group(2), match.group(1)


@dataclass
class Box:
    """One source folder of one library (a folder two libraries share is two boxes)."""

    target: str
    folder: Path
    files: list[Path]


def boxes_of(libraries: list[Library]) -> list[Box]:
    """Each library's source folders with its files there, and the headers it
    publishes. A header belongs to the library with the most sources in its folder."""
    owners: dict[Path, dict[str, list[Path]]] = {}
    for library in libraries:
        for source in library.sources:
            owners.setdefault(source.parent, {}).setdefault(library.target, []).append(source)
    boxes = []
    for library in libraries:
        for folder in sorted({source.parent for source in library.sources}):
            mine = owners[folder][library.target]
            if max(owners[folder], key=lambda t: len(owners[folder][t])) == library.target:
                mine = mine + [h for h in sorted(folder.glob("*.h")) if h not in mine]
            boxes.append(Box(library.target, folder, sorted(mine)))
        for folder in library.public_includes:
            boxes.append(Box(library.target, folder, sorted(folder.rglob("*.h"))))
    return boxes


def include_edges(repo: Path, boxes: list[Box]) -> dict[tuple[int, int], int]:
    """How many #include <...> lines of each box's files name a header of
    another box (boxes by index)."""
    roots = [repo] + [box.folder for box in boxes if box.folder.name == "include"]
    owner = {file: i for i, box in enumerate(boxes) for file in box.files}
    edges: dict[tuple[int, int], int] = {}
    for i, box in enumerate(boxes):
        for source in box.files:
            for name in re.findall(r"^\s*#\s*include\s*<([^>]+)>", source.read_text(), re.M):
                header = next((root / name for root in roots if (root / name).is_file()), None)
                j = owner.get(header) if header else None
                if j is not None and j != i:
                    edges[(i, j)] = edges.get((i, j), 0) + 1
    return edges


def levels(members: list[int], edges: dict[tuple[int, int], int]) -> dict[int, int]:
    """Each box's height in its library: 0 includes no box of the same
    library, otherwise one more than the highest box it includes."""
    inside = set(members)
    height: dict[int, int] = {}

    def visit(box: int, seen: tuple[int, ...]) -> int:
        if box not in height:
            below = [b for (a, b) in edges if a == box and b in inside and b not in seen]
            height[box] = 1 + max((visit(b, seen + (box,)) for b in below), default=-1)
        return height[box]

    for box in members:
        visit(box, ())
    return height


def link_closure(libraries: list[Library]) -> dict[str, set[str]]:
    """Everything each library links, directly or through the libraries it links."""
    by_name = {library.target: library for library in libraries}
    closure: dict[str, set[str]] = {}

    def visit(name: str) -> set[str]:
        if name not in closure:
            closure[name] = set()
            for _, item in by_name[name].links:
                closure[name] |= {item} | (visit(item) if item in by_name else set())
        return closure[name]

    for library in libraries:
        visit(library.target)
    return closure


def link_order(libraries: list[Library]) -> list[Library]:
    """Top to bottom: each library above every library it links."""
    closure = link_closure(libraries)
    return sorted(libraries, key=lambda library: -len(closure[library.target]))


def layer_of(library: Library, closure: set[str]) -> tuple[str, str]:
    """The library's fill and what it stays clear of, from its link lines."""
    python = {"Python::Module", "${TORCH_PYTHON_LIBRARY}"}
    if library.cmake.read_text().lower().count(f"python_add_library({library.target.lower()}"):
        return PYTHON, ""
    if any(item in python for _, item in library.links):
        return PYTHON, ""
    if any("TORCH" in item for item in closure):
        return HOST, "" if closure & python else "links no Python"
    return DRIVER, "links no torch"


def render(repo: Path) -> str:
    libraries = link_order(read_libraries(repo))
    if not libraries:
        raise SystemExit("no add_library in the CMake files")
    boxes = boxes_of(libraries)
    edges = include_edges(repo, boxes)
    closure = link_closure(libraries)
    svg = Svg("tools/figure_layers.py from the CMake files and #include lines")
    left, right = 10, 640
    svg.text(left, 20, "Top to bottom: the libraries the build makes, each above what it links;"
             " inside, their source folders,", fill=GREY)
    svg.text(left, 36, "an arrow per folder another includes (thicker: more #include lines);"
             " → includes from the layer below", fill=GREY)
    y = draw_package(svg, repo, 50, left, right)
    places: dict[int, tuple[float, float, float, float]] = {}
    bands: dict[str, tuple[float, float]] = {}
    for library in libraries:
        top = y
        fill, clear = layer_of(library, closure[library.target])
        members = [i for i, box in enumerate(boxes) if box.target == library.target]
        y = draw_band(svg, repo, library, (fill, clear), boxes, members, edges, places, top,
                      left, right)
        bands[library.target] = (top, y)
        y += 34
    draw_include_arrows(svg, edges, places, boxes)
    draw_links(svg, libraries, bands, right)
    svg.legend(left, y + 2, [("Python", PYTHON), ("PyTorch, no Python", HOST),
                             ("the device runtime, no torch", DRIVER),
                             ("torch's and the system's", TORCH)])
    return svg.render(y + 14)


def draw_package(svg: Svg, repo: Path, y: float, left: float, right: float) -> float:
    package = repo / "torch_accinte"
    count = len(list(package.rglob("*.py")))
    svg.rect(left, y, right - left, 30, PYTHON, title="the Python package")
    svg.text(left + 8, y + 19, "torch_accinte/", mono=True, bold=True)
    svg.text(left + 8 + text_width("torch_accinte/ ", mono=True), y + 19,
             f"the Python package ({count} .py files); imports torch_accinte._C")
    svg.line(right - 90, y + 30, right - 90, y + 63, color="#333", width=2, arrow=True)
    svg.label(right - 84, y + 51, "imports", size=11)
    return y + 64


def draw_band(svg: Svg, repo: Path, library: Library, layer: tuple[str, str], boxes: list[Box],
              members: list[int], edges: dict[tuple[int, int], int],
              places: dict[int, tuple[float, float, float, float]],
              top: float, left: float, right: float) -> float:
    height = levels(members, edges)
    rows = max(height.values(), default=0) + 1
    row_h, gap = 44, 24
    band_h = 30 + rows * row_h + (rows - 1) * gap + 10
    svg.rect(left, top, right - left, band_h, layer[0],
             title=f"target {library.target} in {library.cmake.relative_to(repo)}")
    name = library.output.split("/")[-1] or library.target
    svg.text(left + 8, top + 19, name, mono=True, bold=True)
    svg.text(left + 16 + text_width(name, mono=True), top + 19,
             library.role + (f" · {layer[1]}" if layer[1] else ""))
    svg.text(right - 8, top + 19, f"{library.cmake.relative_to(repo)}", size=10, mono=True,
             anchor="end", fill=GREY)
    for level in range(rows):
        row = sorted((i for i in members if height[i] == level), key=lambda i: boxes[i].folder)
        below = {i: [(boxes[b], n) for (a, b), n in sorted(edges.items())
                     if a == i and boxes[b].target != library.target] for i in row}
        notes = {i: "→ " + ", ".join(f"{outside_label(b, repo)} {n}" for b, n in below[i])
                 for i in row if below[i]}
        needed = max(max((text_width(box_label(boxes[i], repo), mono=True) for i in row),
                         default=0), max((text_width(n, 10) for n in notes.values()), default=0))
        y = top + 30 + (rows - 1 - level) * (row_h + gap)
        width = min(max(needed + 16, 150.0),
                    (right - left - 20 - 12 * (len(row) - 1)) / max(len(row), 1))
        span = len(row) * width + 12 * (len(row) - 1)
        x = left + (right - left - span) / 2
        for i in row:
            box = boxes[i]
            names = ", ".join(f.name for f in box.files)
            svg.rect(x, y, width, row_h, "white", title=f"{box.folder.relative_to(repo)}: {names}")
            svg.text(x + width / 2, y + 15, box_label(box, repo), mono=True, anchor="middle")
            count = len(box.files)
            svg.text(x + width / 2, y + 28, f"{count} file{'s' if count != 1 else ''}", size=10,
                     anchor="middle", fill=GREY)
            if i in notes:
                svg.text(x + width / 2, y + 40, notes[i], size=10, anchor="middle", fill=GREY)
            places[i] = (x, y, width, row_h)
            x += width + 12
    return top + band_h


def box_label(box: Box, repo: Path) -> str:
    """A folder relative to its library's CMake folder (the repository's path
    when it is that folder); a folder of one file names the file."""
    base = next((p for p in (box.folder, *box.folder.parents)
                 if (p / "CMakeLists.txt").is_file()), repo)
    shown = box.files[0] if len(box.files) == 1 else box.folder
    if base == box.folder or base == repo:
        return str(shown.relative_to(repo)) + ("/" if shown == box.folder else "")
    return str(shown.relative_to(base)) + ("/" if shown == box.folder else "")


def outside_label(box: Box, repo: Path) -> str:
    """A box named from another library: its path, or a header as it is included."""
    if len(box.files) == 1:
        return f"{box.files[0].parent.name}/{box.files[0].name}"
    return f"{box.folder.relative_to(repo)}/"


def draw_include_arrows(svg: Svg, edges: dict[tuple[int, int], int],
                        places: dict[int, tuple[float, float, float, float]],
                        boxes: list[Box]) -> None:
    """Within a library: the bottom of the including box to the top of the
    included one, the ends spread along each box in the order of the other ends."""
    inner = {(a, b): n for (a, b), n in edges.items() if boxes[a].target == boxes[b].target}
    outgoing: dict[int, list[int]] = {}
    incoming: dict[int, list[int]] = {}
    for a, b in inner:
        outgoing.setdefault(a, []).append(b)
        incoming.setdefault(b, []).append(a)

    def spot(box: int, others: list[int], other: int) -> float:
        x, _, w, _ = places[box]
        ordered = sorted(others, key=lambda o: places[o][0])
        return x + w * (ordered.index(other) + 1) / (len(ordered) + 1)

    for (a, b), count in sorted(inner.items()):
        x1, y1 = spot(a, outgoing[a], b), places[a][1] + places[a][3]
        x2, y2 = spot(b, incoming[b], a), places[b][1]
        title = f"{boxes[a].folder.name}/ includes {boxes[b].folder.name}/: {count} lines"
        svg.line(x1, y1, x2, y2 - 1, color="#999", width=0.8 + min(count, 20) / 10, arrow=True,
                 title=title)


def draw_links(svg: Svg, libraries: list[Library], bands: dict[str, tuple[float, float]],
               right: float) -> None:
    """Our libraries' links on the right of the bands; torch's and the system's beside them."""
    externals: dict[str, float] = {}
    for library in libraries:
        top, bottom = bands[library.target]
        options = " ".join(o for o in library.link_options if o.startswith("--"))
        for visibility, item in library.links:
            words = f"links ({visibility.lower()}{', ' + options if options else ''})"
            if item in bands:
                x = right - 90
                svg.line(x, bottom, x, bands[item][0] - 1, color="#333", width=2, arrow=True)
                svg.label(x + 6, bottom + 21, words, size=11)
                continue
            name = EXTERNAL_NAMES.get(item, item)
            if name not in externals:
                ey = top + 6 + 24 * sum(1 for v in externals.values() if v > top)
                externals[name] = ey
                svg.rect(right + 50, ey, WIDTH - right - 60, 20, TORCH, title=item)
                svg.text(right + 56, ey + 14, name, mono=True)
            ey = externals[name] + 10
            svg.line(right, min(max(ey, top + 8), bottom - 4), right + 48, ey, color="#333",
                     arrow=True, title=f"{library.target} {words} {item}")
