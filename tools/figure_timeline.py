"""Two streams and two events from a real run: docs/chapters/img/streams-timeline.svg.

`collect` runs WORKLOAD in a child interpreter under torch.profiler and
keeps its Chrome trace; `render` draws the trace as tools/trace_svg.py does
(the same event categories, colours and launch arrows), and adds what
trace_svg does not show: where each event completed on the stream that
recorded it, and the stretch during which the waiting stream held its next
kernel back. The workload names its event calls with record_function
(``event record: NAME (stream ID)``, ``event wait: NAME (stream ID)``), so
the picture needs no guessing: each record completes when the last kernel
launched before it on its stream ends, and each wait holds back the first
kernel launched after it on the waiting stream.

    python tools/figures.py streams-timeline
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import trace_svg
from figure_svg import GREY, WIDTH, Svg, text_width

LABEL_W, ROW_H, TOP = 150, 48, 56
BAR = 16  # a bar's top within its row; the space above holds the event names
EVENT = re.compile(r"^event (record|wait): (\w+) \(stream (\d+)\)$")
EVENT_COLOR = "#c0392b"

# Main computes y while the side stream starts on its own input; the side
# stream waits for `ready` before it reads y, the main stream waits for `done`
# before it reads w. Every signature runs once before the profile, so that
# first calls (checked on the host) do not show.
WORKLOAD = '''
import sys
import torch
from torch.profiler import ProfilerActivity, profile, record_function

device = torch.device("accinte")
main, side = torch.accinte.current_stream(), torch.accinte.Stream()
a = torch.randn(512, 512, device=device)
b = torch.randn(512 * 512, device=device)
side.wait_stream(main)  # the side stream reads b, filled on main


def step(trace):
    y = (a @ a).relu()
    ready, done = torch.accinte.Event(), torch.accinte.Event()
    with record_function(f"event record: ready (stream {main.stream_id})"):
        ready.record(main)
    with torch.accinte.stream(side):
        z = b.view_as(y) * 2
        with record_function(f"event wait: ready (stream {side.stream_id})"):
            side.wait_event(ready)
        w = z + y
        with record_function(f"event record: done (stream {side.stream_id})"):
            done.record(side)
    with record_function(f"event wait: done (stream {main.stream_id})"):
        main.wait_event(done)
    return w.sum().item()


step(None)
torch.accinte.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
    step(prof)
prof.export_chrome_trace(sys.argv[1])
'''


def collect(trace: Path, workload: str = WORKLOAD) -> list[dict]:
    """Runs `workload` in a child interpreter and returns its trace's events."""
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "workload.py"
        script.write_text(workload)
        subprocess.run([sys.executable, str(script), str(trace)], check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
    return json.loads(trace.read_text())["traceEvents"]


def events_of(events: list[dict]) -> list[tuple[str, str, int, float]]:
    """(kind, name, stream, host time) of each annotated event call."""
    found = []
    for e in events:
        match = EVENT.match(e.get("name", "")) if e.get("cat") == "user_annotation" else None
        if match:
            found.append((match.group(1), match.group(2), int(match.group(3)), e["ts"]))
    return sorted(found, key=lambda item: item[3])


def render(events: list[dict]) -> str:
    device = [e for e in events if e.get("cat") in trace_svg.DEVICE_CATS and e.get("ph") == "X"]
    runtime = [e for e in events if e.get("cat") == "privateuse1_runtime"]
    calls = events_of(events)
    if not device or not calls:
        raise SystemExit("the trace holds no accinte kernel or no annotated event call")
    host = max({(e["pid"], e["tid"]) for e in runtime},
               key=lambda r: sum(1 for e in runtime if (e["pid"], e["tid"]) == r))
    streams = sorted({e["tid"] for e in device})
    rows = {"host": 0} | {s: i + 1 for i, s in enumerate(streams)}
    launched = {e["args"]["correlation"]: e["ts"] for e in runtime if "correlation" in e["args"]}
    for e in device:  # when the host launched it
        e["launched"] = launched.get(e["args"].get("correlation"), e["ts"])
    t0 = min(min(e["ts"] for e in device), min(e["ts"] for e in runtime))
    t1 = max(e["ts"] + e.get("dur", 0) for e in device + runtime)
    scale = (WIDTH - LABEL_W - 16) / max(t1 - t0, 1.0)

    def x(ts: float) -> float:
        return LABEL_W + (ts - t0) * scale

    def y(row) -> float:
        return TOP + rows[row] * ROW_H

    svg = Svg("tools/figure_timeline.py from a torch.profiler trace of a real run")
    svg.text(8, 16, "A real run: stream 0 computes y = relu(a @ a) while stream 1 starts on z;"
             " stream 1 waits for the event", fill=GREY)
    svg.text(8, 32, "ready before it adds y, stream 0 waits for done before it sums w;"
             " .item() waits on the host.", fill=GREY)
    height = TOP + len(rows) * ROW_H + 34
    draw_axis(svg, t0, t1, x, height - 34)
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == 0}
    for row, i in rows.items():
        label = "host thread" if row == "host" else names.get(row, f"stream {row}")
        svg.rect(0, TOP + i * ROW_H, WIDTH, ROW_H, "#fafafa" if row == "host" else "#f4f7fb",
                 stroke="none", rx=0)
        svg.text(8, TOP + i * ROW_H + ROW_H / 2 + 4, label)
    draw_host(svg, events, runtime, host, x, y("host"), scale, t0)
    for e in device:
        bx, bw = x(e["ts"]), max(e["dur"] * scale, 1.5)
        name = e["name"] if e["cat"] == "kernel" else e["name"].split(" (")[0]
        svg.rect(bx, y(e["tid"]) + BAR, bw, ROW_H - BAR - 6,
                 trace_svg.color(e["name"], e["cat"]), stroke="#666", rx=1,
                 title=f'{e["name"]}, {e["dur"] / 1000:.3f} ms')
        for shown in (name, name.removeprefix("aten::")):
            if bw > 6 * len(shown) + 4:
                svg.text(bx + 3, y(e["tid"]) + BAR + 13, shown, size=11)
                break
        svg.line(x(e["launched"]), y("host") + ROW_H - 6, bx, y(e["tid"]) + BAR, color="#999",
                 width=0.6, arrow=True)
    draw_events(svg, calls, device, x, y)
    svg.legend(LABEL_W, height - 8, [("CPU operator", "#d9d9d9"), ("runtime call", "#4e79a7"),
                                     ("kernel", "hsl(200, 55%, 62%)"), ("held back", "#f6d5d1"),
                                     ("event", EVENT_COLOR)])
    return svg.render(height)


def draw_axis(svg: Svg, t0: float, t1: float, x, bottom: float) -> None:
    span_ms = (t1 - t0) / 1000
    step = next(s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
                if span_ms / s <= 8)
    tick = 0.0
    while tick <= span_ms:
        tx = x(t0 + tick * 1000)
        svg.line(tx, TOP - 6, tx, bottom, color="#e4e4e4")
        svg.text(tx, TOP - 10, f"{tick:g} ms", size=11, anchor="middle", fill=GREY)
        tick += step


def draw_host(svg: Svg, events: list[dict], runtime: list[dict], host, x, top: float,
              scale: float, t0: float) -> None:
    ops = [e for e in events if e.get("cat") == "cpu_op" and (e["pid"], e["tid"]) == host
           and e["ts"] + e["dur"] >= t0]
    for op in trace_svg.outermost(ops):
        start = max(op["ts"], t0)
        svg.rect(x(start), top + 10, max((op["ts"] + op["dur"] - start) * scale, 1), ROW_H - 24,
                 "#d9d9d9", stroke="#bbb", rx=1, title=op["name"])
    for call in (e for e in runtime if (e["pid"], e["tid"]) == host):
        fill = "#e15759" if call["name"].endswith("Synchronize") else "#4e79a7"
        svg.rect(x(call["ts"]), top + ROW_H - 12, max(call["dur"] * scale, 1.5), 6, fill,
                 stroke="none", rx=0, title=call["name"])


def draw_events(svg: Svg, calls: list[tuple[str, str, int, float]], device: list[dict],
                x, y) -> None:
    """Each record as a diamond where it completed on its stream; each wait
    as the stretch its stream held back, with an arrow from the record."""
    completed: dict[str, float] = {}
    for kind, name, stream, ts in calls:
        on_stream = [e for e in device if e["tid"] == stream]
        before = [e for e in on_stream if e["launched"] < ts]
        if kind == "record":
            done = max((e["ts"] + e["dur"] for e in before), default=ts)
            completed[name] = done
            cx, cy = x(done), y(stream) + BAR + (ROW_H - BAR - 6) / 2
            svg.path(f"M{cx:.1f},{cy - 8:.1f} l6,8 l-6,8 l-6,-8 z", color=EVENT_COLOR)
            svg.items[-1] = svg.items[-1].replace('fill="none"', f'fill="{EVENT_COLOR}"')
            label = f"{name} completes"
            half = text_width(label, 11) / 2
            lx = min(max(cx, LABEL_W + half), WIDTH - 4 - half)
            svg.text(lx, y(stream) + BAR - 4, label, size=11, bold=True, anchor="middle",
                     fill=EVENT_COLOR)
            continue
        after = [e for e in on_stream if e["launched"] >= ts]
        if name not in completed or not after:
            continue
        held_from = max([ts] + [e["ts"] + e["dur"] for e in before])
        resumed = min(e["ts"] for e in after)
        if resumed > held_from:
            svg.rect(x(held_from), y(stream) + BAR, x(resumed) - x(held_from), ROW_H - BAR - 6,
                     "#f6d5d1", stroke=EVENT_COLOR, rx=1, dash=True,
                     title=f"stream {stream} waits for {name}")
        source = y(completed_row(calls, name))
        down = y(stream) > source
        svg.line(x(completed[name]), source + (ROW_H - 6 if down else BAR), x(resumed),
                 y(stream) + (BAR if down else ROW_H - 6), color=EVENT_COLOR, width=1.4,
                 arrow=True, title=f"stream {stream}: wait_event({name})")


def completed_row(calls: list[tuple[str, str, int, float]], name: str) -> int:
    return next(stream for kind, event, stream, _ in calls if kind == "record" and event == name)

