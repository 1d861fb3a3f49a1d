"""tools/figures.py and the figure scripts: each draws from the code or from a
real run of a small workload, and what it draws parses as SVG and names what
the picture is about. Every figure is committed under docs/chapters/img/ and
shown by a chapter, and every picture there is one `make figures` redraws."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import figure_allocator  # noqa: E402
import figure_graphs  # noqa: E402
import figure_layers  # noqa: E402
import figure_sequences  # noqa: E402
import figure_timeline  # noqa: E402
import figures  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
IMG = REPO / "docs" / "chapters" / "img"


def parse(svg: str) -> tuple[list[str], list[str]]:
    """The texts and the tooltips of an SVG document, which must parse."""
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    return texts, titles


def test_every_figure_is_committed_and_shown_by_a_chapter():
    chapters = "\n".join(p.read_text() for p in (REPO / "docs" / "chapters").glob("*.md"))
    shown = set(re.findall(r"!\[[^\]]+\]\(img/([\w-]+)\.svg\)", chapters))
    assert set(figures.FIGURES) == {p.stem for p in IMG.glob("*.svg")}, \
        "every picture in docs/chapters/img/ is one that `make figures` draws"
    assert set(figures.FIGURES) <= shown, f"not in a chapter: {set(figures.FIGURES) - shown}"
    for name in figures.FIGURES:
        parse((IMG / f"{name}.svg").read_text())
        assert name.split("-")[0] in {p.stem for p in (REPO / "docs" / "chapters").glob("*.md")}, \
            "a figure's name starts with its chapter's (docs/README.md)"


@pytest.mark.parametrize("name, draw", [
    ("overview-libraries", lambda: figure_layers.render(REPO)),
    ("streams-operator-call", lambda: figure_sequences.render_operator_call(REPO)),
    ("distributed-data-path", lambda: figure_sequences.render_distributed(REPO)),
])
def test_figures_drawn_from_the_code_are_up_to_date(name, draw):
    """The figures read from the code are what the code gives now: a folder,
    a link or an #include added without redrawing fails here."""
    assert (IMG / f"{name}.svg").read_text() == draw(), (
        f"docs/chapters/img/{name}.svg is not what the code gives: run `make figures` "
        f"(or python tools/figures.py {name}) and commit the picture")


def test_cli_refuses_an_unknown_figure_and_writes_into_out(tmp_path, capsys):
    with pytest.raises(SystemExit):
        figures.main(["no-such-figure"])
    assert "no figure no-such-figure" in capsys.readouterr().err
    assert figures.main(["overview-libraries", "--out", str(tmp_path)]) == 0
    parse((tmp_path / "overview-libraries.svg").read_text())


def test_layers_are_read_from_the_build():
    texts, titles = parse(figure_layers.render(REPO))
    for name in ("_C.so", "libtorch_bindings.so", "libtorch_accinte.so", "libaccinte.so",
                 "runtime/", "emulation/", "emulation/fallback/", "distributed/", "profiler/",
                 "torch_accinte/csrc/", "src/", "libtorch, libc10", "libtorch_python"):
        assert name in texts, name
    assert "links (private, --no-as-needed)" in texts
    order = [t for t in texts if t.endswith(".so")]
    assert order == ["_C.so", "libtorch_bindings.so", "libtorch_accinte.so", "libaccinte.so"]
    assert any(t.startswith("native/ includes runtime/") for t in titles)
    assert ElementTree.fromstring(figure_layers.render(REPO)).get("viewBox"), "scales with the page"


def test_layers_follow_a_change_in_the_code(tmp_path):
    """A small project: its libraries, folders, links and includes, as drawn."""
    (tmp_path / "CMakeLists.txt").write_text(
        "# Two libraries:\n#   libtop.so   the upper one   -> libbase\n"
        "#   libbase.so  the lower one   -> nothing\nadd_subdirectory(base)\n"
        "add_subdirectory(top)\n")
    for lib, folders in (("base", ["core"]), ("top", ["api", "impl"])):
        for folder in folders:
            (tmp_path / lib / folder).mkdir(parents=True)
    (tmp_path / "base" / "CMakeLists.txt").write_text(
        "file(GLOB S CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/core/*.cpp)\n"
        "add_library(base SHARED ${S})\n")
    (tmp_path / "top" / "CMakeLists.txt").write_text(
        "file(GLOB_RECURSE S CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)\n"
        "add_library(top SHARED ${S})\ntarget_link_libraries(top PUBLIC base Threads::Threads)\n")
    (tmp_path / "base" / "core" / "Core.cpp").write_text("int core() { return 1; }\n")
    (tmp_path / "base" / "core" / "Core.h").write_text("int core();\n")
    (tmp_path / "top" / "impl" / "Impl.cpp").write_text("#include <base/core/Core.h>\n")
    (tmp_path / "top" / "impl" / "Impl.h").write_text("\n")
    (tmp_path / "top" / "api" / "Api.cpp").write_text("#include <top/impl/Impl.h>\n")
    (tmp_path / "torch_accinte").mkdir()
    texts, titles = parse(figure_layers.render(tmp_path))
    assert [t for t in texts if t.endswith(".so")] == ["libtop.so", "libbase.so"]
    assert {"api/Api.cpp", "impl/", "core/", "pthreads", "links (public)"} <= set(texts)
    assert "→ base/core/ 1" in texts  # an include into the layer below
    assert "api/ includes impl/: 1 lines" in titles


def test_sequences_name_the_code_and_fail_on_a_rename(tmp_path):
    texts, titles = parse(figure_sequences.render_operator_call(REPO))
    for label in ("accinte_fallback(op, stack)", "queue_kernel → launch_kernel(stream, closure)",
                  "run_kernel → FallbackKernel in CpuKernelScope",
                  "or Stream::runPendingHere: untaken tasks run on this thread",
                  "release_finished_kernels(): closures destroyed on the host"):
        assert label in texts, label
    texts, _ = parse(figure_sequences.render_distributed(REPO))
    assert "launch(*shared_->engine) → ShmEngine::allreduce" in texts
    assert "CollectiveKernel" in texts and "other rank" in texts
    steps = [figure_sequences.Step("a", "b", "renamed", (("x.cpp", "old_name("),))]
    (tmp_path / "x.cpp").write_text("void new_name(\n    int);\n")
    with pytest.raises(SystemExit, match=r"'old_name\(' is not in x.cpp"):
        figure_sequences.check_names(tmp_path, steps)
    steps = [figure_sequences.Step("a", "b", "rewrapped", (("x.cpp", "new_name( int)"),))]
    figure_sequences.check_names(tmp_path, steps)  # whitespace does not count


def test_timeline_from_a_real_run(tmp_path):
    events = figure_timeline.collect(tmp_path / "trace.json")
    texts, titles = parse(figure_timeline.render(events))
    assert {"host thread", "stream 0 (default)", "stream 1", "ready completes",
            "done completes"} <= set(texts)
    assert "stream 1 waits for ready" in titles or "stream 1: wait_event(ready)" in titles
    assert "stream 0: wait_event(done)" in titles
    for kernel in ("aten::mm", "aten::relu", "aten::mul", "aten::add", "aten::sum"):
        assert any(t.startswith(kernel + ",") for t in titles), kernel


def test_allocator_blocks_from_a_real_snapshot(tmp_path):
    data = figure_allocator.collect(tmp_path / "snapshot.json")
    states = {block["state"] for segment in data["segments"] for block in segment["blocks"]}
    assert states == {"active_allocated", "active_pending_free", "inactive"}
    texts, titles = parse(figure_allocator.render(data))
    assert {"small pool segment", "large pool segment", "x", "buf, deleted"} <= set(texts)
    assert any(t.startswith("buf: active_pending_free") for t in titles)
    assert any(t.startswith("s: active_allocated") for t in titles)
    assert any("stream 1" in t for t in texts), "s has a segment of the side stream"


def test_graph_capture_and_replays_from_a_real_run(tmp_path):
    events = figure_graphs.collect(tmp_path / "trace.json")
    found = figure_graphs.phases(events)
    assert [p["name"] for p in found] == ["capture", "replay 1", "replay 2"]
    assert not found[0]["kernels"], "nothing runs during the capture"
    texts, titles = parse(figure_graphs.render(events))
    assert "capture: nothing runs" in texts
    assert sum(t.startswith("node: ") for t in titles) == 3
    for name in ("aten::mm", "aten::relu", "aten::add"):
        assert sum(t.startswith(f"{name}, a node of the graph") for t in titles) == 2, name
    assert sum(t.startswith("aten::mul_, an eager kernel") for t in titles) == 2
