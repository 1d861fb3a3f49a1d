#!/usr/bin/env python3
"""Draws the guide's figures into docs/chapters/img/ (`make figures`).

Each figure is made by a script from the code or from a real run, never by
hand, so that it changes when the code does:

  overview-libraries     the four libraries: CMake targets, source folders,
                         link lines and #include lines (tools/figure_layers.py)
  streams-operator-call  one operator call across the host thread and the
                         stream's worker; every name is checked against the
                         sources (tools/figure_sequences.py)
  streams-timeline       two streams and an event, from a torch.profiler trace
                         of a small script (tools/figure_timeline.py)
  allocator-blocks       the caching allocator's segments and blocks, from
                         torch.accinte.memory._snapshot() after a small script
                         (tools/figure_allocator.py)
  distributed-data-path  one collective from ProcessGroupACCL to the other
                         rank; names checked (tools/figure_sequences.py)
  graphs-capture-replay  a graph captured and replayed twice, from a trace
                         (tools/figure_timeline.py)
  profiler-trace         a profiled training step (tools/trace_svg.py --run)

Figures from a real run run their script in a child interpreter, so that
nothing else the process did shows in them.

Usage: ``python tools/figures.py [NAME ...] [--out DIR]`` (default: every
figure, into docs/chapters/img/).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
sys.path.insert(0, str(TOOLS))

import figure_allocator  # noqa: E402
import figure_graphs  # noqa: E402
import figure_layers  # noqa: E402
import figure_sequences  # noqa: E402
import figure_timeline  # noqa: E402

DEFAULT_OUT = REPO / "docs" / "chapters" / "img"


def draw_layers(out: Path) -> None:
    out.write_text(figure_layers.render(REPO))


def draw_operator_call(out: Path) -> None:
    out.write_text(figure_sequences.render_operator_call(REPO))


def draw_distributed(out: Path) -> None:
    out.write_text(figure_sequences.render_distributed(REPO))


def draw_timeline(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        out.write_text(figure_timeline.render(figure_timeline.collect(Path(scratch) / "t.json")))


def draw_allocator(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        out.write_text(figure_allocator.render(figure_allocator.collect(Path(scratch) / "s.json")))


def draw_graphs(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        out.write_text(figure_graphs.render(figure_graphs.collect(Path(scratch) / "g.json")))


def draw_profiler_trace(out: Path) -> None:
    subprocess.run([sys.executable, str(TOOLS / "trace_svg.py"), "--run", str(out)], check=True,
                   stdout=subprocess.DEVNULL)


FIGURES = {
    "overview-libraries": draw_layers,
    "streams-operator-call": draw_operator_call,
    "streams-timeline": draw_timeline,
    "allocator-blocks": draw_allocator,
    "distributed-data-path": draw_distributed,
    "graphs-capture-replay": draw_graphs,
    "profiler-trace": draw_profiler_trace,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of {', '.join(FIGURES)}")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the folder to write into")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in FIGURES]
    if unknown:
        parser.error(f"no figure {', '.join(unknown)}; there are {', '.join(FIGURES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or FIGURES:
        out = args.out / f"{name}.svg"
        FIGURES[name](out)
        print(f"wrote {out.relative_to(REPO) if REPO in out.parents else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
