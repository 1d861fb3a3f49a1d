"""A graph captured once and replayed twice, from a real run:
docs/chapters/img/graphs-capture-replay.svg.

`collect` runs WORKLOAD in a child interpreter under torch.profiler. During
the capture the host launches three kernels and none runs: the runtime
records each launch (with its correlation id) as a node of the graph. Each
replay runs those nodes on the stream with no launch on the host: the
kernels of a replay carry the correlation ids of the launches made at
capture time, which is how the figure finds them. `render` draws one panel
per phase, each to its own time scale (the capture also collects garbage and
waits for the device, hundreds of times longer than a replay).

    python tools/figures.py graphs-capture-replay
"""

from __future__ import annotations

from pathlib import Path

import figure_timeline
import trace_svg
from figure_svg import GREY, WIDTH, Svg, text_width

TOP, ROW_H, LABEL_W = 52, 46, 96

WORKLOAD = '''
import sys
import torch
from torch.profiler import ProfilerActivity, profile, record_function

device = torch.device("accinte")
x = torch.randn(256, 256, device=device)
y = (x @ x).relu() + 1  # every signature once, before the profile
torch.accinte.synchronize()
g = torch.accinte.Graph()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
    with record_function("capture"):
        with torch.accinte.graph(g):
            y = (x @ x).relu() + 1
    for i in range(2):
        with record_function(f"replay {i + 1}"):
            x.mul_(0.5)  # an eager kernel: new inputs, in place
            with record_function("g.replay()"):
                g.replay()
    torch.accinte.synchronize()
prof.export_chrome_trace(sys.argv[1])
'''


def collect(trace: Path, workload: str = WORKLOAD) -> list[dict]:
    """Runs `workload` in a child interpreter and returns its trace's events
    (the timeline figure's runner, with this figure's workload)."""
    return figure_timeline.collect(trace, workload)


def phases(events: list[dict]) -> list[dict]:
    """The capture and each replay: its annotation, the host's launches and
    g.replay() calls in it, and the kernels it ran. An eager kernel belongs to
    the phase that launched it, a kernel of the graph to the phase of the
    kernel before it on the stream (each replay begins with an eager one)."""
    marks = sorted((e for e in events if e.get("cat") == "user_annotation"
                    and (e["name"] == "capture" or e["name"].startswith("replay "))),
                   key=lambda e: e["ts"])
    calls = [e for e in events if (e.get("cat") == "privateuse1_runtime"
                                   and e["name"].startswith("acLaunch"))
             or (e.get("cat") == "user_annotation" and e["name"] == "g.replay()")]
    kernels = sorted((e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"),
                     key=lambda e: e["ts"])
    found = []
    for i, mark in enumerate(marks):
        end = marks[i + 1]["ts"] if i + 1 < len(marks) else float("inf")
        found.append({"name": mark["name"], "kernels": [],
                      "calls": [e for e in calls if mark["ts"] <= e["ts"] < end]})
    launched_in = {c["args"]["correlation"]: p for p in found for c in p["calls"]
                   if "correlation" in c.get("args", {})}
    current = None
    for kernel in kernels:
        phase = launched_in.get(kernel["args"]["correlation"])
        if phase is not None and phase["name"] != "capture":
            current = phase
        if current is not None:
            current["kernels"].append(kernel)
    return found


def render(events: list[dict]) -> str:
    found = phases(events)
    if len(found) < 2 or found[0]["name"] != "capture" or not found[0]["calls"]:
        raise SystemExit("the trace holds no capture followed by replays")
    captured = {e["args"]["correlation"]: e for e in found[0]["calls"]
                if "correlation" in e["args"]}
    names = {k["args"]["correlation"]: k["name"] for p in found[1:] for k in p["kernels"]}
    svg = Svg("tools/figure_graphs.py from a torch.profiler trace of a real run")
    svg.text(8, 16, "A real run: capture y = relu(x @ x) + 1 once, then x.mul_(0.5) and"
             " g.replay() twice. Each panel has its", fill=GREY)
    svg.text(8, 32, "own time scale. A replay runs the captured launches (same correlation id)"
             " without launching them again.", fill=GREY)
    for row, label in enumerate(("host thread", "stream")):
        svg.rect(0, TOP + row * ROW_H, WIDTH, ROW_H, "#fafafa" if row == 0 else "#f4f7fb",
                 stroke="none", rx=0)
        svg.text(8, TOP + row * ROW_H + ROW_H / 2 + 4, label)
    widths = [0.28] + [0.72 / (len(found) - 1)] * (len(found) - 1)
    x = LABEL_W
    for phase, share in zip(found, widths):
        width = (WIDTH - LABEL_W - 10) * share
        draw_phase(svg, phase, captured, names, x, width)
        x += width
    y = TOP + 2 * ROW_H + 34
    svg.legend(LABEL_W, y, [("launch on the host", "#4e79a7"), ("recorded node", "white"),
                            ("kernel of the graph (colour by name)", "hsl(200, 55%, 62%)"),
                            ("eager kernel", "#bbbbbb")])
    return svg.render(y + 12)


def draw_phase(svg: Svg, phase: dict, captured: dict, names: dict, left: float,
               width: float) -> None:
    host, stream = TOP, TOP + ROW_H
    svg.line(left, TOP - 8, left, stream + ROW_H + 14, color="#bbb")
    svg.text(left + 6, TOP - 6, phase["name"] + (": nothing runs"
                                                 if phase["name"] == "capture" else ""),
             bold=True)
    items = phase["calls"] + phase["kernels"]
    t0 = min(e["ts"] for e in items)
    t1 = max(e["ts"] + e["dur"] for e in items)
    pad = (t1 - t0) * 0.06 + 1
    scale = (width - 12) / (t1 - t0 + 2 * pad)

    def x(ts: float) -> float:
        return left + 6 + (ts - t0 + pad) * scale

    span = (t1 - t0) / 1000
    svg.text(left + width - 6, stream + ROW_H + 14, f"{span:.2f} ms shown", size=10,
             anchor="end", fill=GREY)
    if phase["name"] == "capture":
        for call in phase["calls"]:
            cx = x(call["ts"])
            name = names.get(call["args"]["correlation"], call["name"])
            svg.rect(cx - 1, host + ROW_H - 14, 3, 8, "#4e79a7", stroke="none", rx=0,
                     title=f"{call['name']}: {name} (correlation {call['args']['correlation']})")
            svg.line(cx, host + ROW_H - 6, cx, stream + 10, color="#999", width=0.8, arrow=True)
        draw_nodes(svg, phase["calls"], names, x, stream, left, width)
        return
    for call in phase["calls"]:
        if call["name"] == "g.replay()":
            svg.rect(x(call["ts"]), host + 10, max(call["dur"] * scale, 2), ROW_H - 24,
                     "#d9d9d9", stroke="#bbb", rx=1, title="g.replay() on the host")
            svg.text(x(call["ts"]), host + 8, "g.replay()", size=10, fill=GREY)
        else:
            svg.rect(x(call["ts"]) - 1, host + ROW_H - 14, 3, 8, "#4e79a7", stroke="none",
                     rx=0, title=call["name"])
    for kernel in phase["kernels"]:
        in_graph = kernel["args"]["correlation"] in captured
        fill = trace_svg.color(kernel["name"], "kernel") if in_graph else "#bbbbbb"
        kx, kw = x(kernel["ts"]), max(kernel["dur"] * scale, 2)
        what = "a node of the graph" if in_graph else "an eager kernel"
        svg.rect(kx, stream + 10, kw, ROW_H - 20, fill, stroke="#666", rx=1,
                 title=f"{kernel['name']}, {what}, correlation {kernel['args']['correlation']}")
        short = kernel["name"].removeprefix("aten::")
        if kw > text_width(short, 10) + 4:
            svg.text(kx + kw / 2, stream + ROW_H / 2 + 4, short, size=10, anchor="middle")


def draw_nodes(svg: Svg, calls: list[dict], names: dict, x, stream: float, left: float,
               width: float) -> None:
    """The captured launches as dashed boxes: recorded, not run."""
    for call in calls:
        cx = x(call["ts"])
        short = names.get(call["args"]["correlation"], "?").removeprefix("aten::")
        w = text_width(short, 10) + 8
        cx = min(max(cx, left + w / 2 + 4), left + width - w / 2 - 4)
        svg.rect(cx - w / 2, stream + 10, w, ROW_H - 20, "white", stroke="#666", dash=True,
                 rx=1, title=f"node: {short}, recorded at capture, run at each replay")
        svg.text(cx, stream + ROW_H / 2 + 4, short, size=10, anchor="middle")
