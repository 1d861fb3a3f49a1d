"""The caching allocator's segments and blocks after a real run:
docs/chapters/img/allocator-blocks.svg.

`collect` runs WORKLOAD in a child interpreter (a fresh allocator: nothing
else the process did shows) and keeps `torch.accinte.memory._snapshot()`,
the format of `torch.cuda.memory._snapshot()`, with the name the workload
gave each tensor at its address. `render` draws one bar per segment, to the
segment's own scale, its blocks coloured by state: allocated, freed but
still in use by a stream (`active_pending_free`, after `record_stream`), and
free (`inactive`).

    python tools/figures.py allocator-blocks
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from figure_svg import GREY, WIDTH, Svg, text_width

STATES = {  # the snapshot's block states, how the figure shows them
    "active_allocated": ("#4e79a7", "allocated"),
    "active_pending_free": ("#f28e2b", "freed, pending its streams' events"),
    "inactive": ("#e6e6e6", "free, cached for reuse"),
}
LABEL_W, ROW_H, TOP = 190, 58, 52

# Two small-pool requests and a freed one; in the large pool, a tensor freed
# while the side stream still reads it (record_stream), and one allocated on
# the side stream, which gets a segment of its own stream.
WORKLOAD = '''
import json
import sys
import torch

device = torch.device("accinte")
main, side = torch.accinte.current_stream(), torch.accinte.Stream()
names = {}


def named(name, tensor):
    names[str(tensor.data_ptr())] = name
    return tensor


w = named("w", torch.empty(16 << 10, device=device))
b = named("b", torch.empty(64 << 10, device=device))
tmp = named("tmp", torch.empty(128 << 10, device=device))
del tmp
x = named("x", torch.empty(1 << 20, device=device))
buf = named("buf", torch.empty(3 << 19, device=device))
side.wait_stream(main)
with torch.accinte.stream(side):
    torch.accinte._sleep(1000)  # the side stream is still busy at the snapshot
    buf.add_(1)
    s = named("s", torch.empty(1 << 19, device=device))
buf.record_stream(side)
del buf
snapshot = torch.accinte.memory._snapshot()
streams = {str(main.native_handle): f"stream {main.stream_id} (default)",
           str(side.native_handle): f"stream {side.stream_id}"}
segments = [{k: v for k, v in seg.items() if k != "frames"} for seg in snapshot["segments"]]
for seg in segments:
    seg["blocks"] = [{k: v for k, v in blk.items() if k != "frames"} for blk in seg["blocks"]]
with open(sys.argv[1], "w") as out:
    json.dump({"segments": segments, "names": names, "streams": streams}, out)
torch.accinte.synchronize()
'''


def collect(path: Path, workload: str = WORKLOAD) -> dict:
    """Runs `workload` in a child interpreter and returns what it saved."""
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "workload.py"
        script.write_text(workload)
        subprocess.run([sys.executable, str(script), str(path)], check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
    return json.loads(path.read_text())


def size_text(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value >= 10 or value == int(value) else \
                f"{value:.1f} {unit}"
    return f"{n} B"


def render(data: dict) -> str:
    segments = sorted(data["segments"], key=lambda s: (s["segment_type"] != "small",
                                                       s["address"]))
    if not segments:
        raise SystemExit("the snapshot holds no segment")
    names = {int(address): name for address, name in data["names"].items()}
    streams = data.get("streams", {})
    svg = Svg("tools/figure_allocator.py from torch.accinte.memory._snapshot() of a real run")
    svg.text(8, 16, "torch.accinte.memory._snapshot() after a small script: one bar per segment"
             " (acMalloc), each to its", fill=GREY)
    svg.text(8, 32, "own scale, its blocks by state; a block's name is the tensor the script"
             " made there.", fill=GREY)
    right = WIDTH - 10
    for i, segment in enumerate(segments):
        top = TOP + i * ROW_H
        stream = streams.get(str(segment["stream"]), "another stream")
        svg.text(8, top + 20, f"{segment['segment_type']} pool segment", bold=True)
        svg.text(8, top + 36, f"{size_text(segment['total_size'])} · {stream}", size=11,
                 fill=GREY)
        scale = (right - LABEL_W) / segment["total_size"]
        for block in segment["blocks"]:
            draw_block(svg, block, names.get(block["address"]), segment, scale, top)
    y = TOP + len(segments) * ROW_H + 6
    svg.legend(8, y + 10, [(text, fill) for fill, text in STATES.values()])
    return svg.render(y + 20)


def draw_block(svg: Svg, block: dict, name: str | None, segment: dict, scale: float,
               top: float) -> None:
    fill, meaning = STATES.get(block["state"], ("#ffffff", block["state"]))
    x = LABEL_W + (block["address"] - segment["address"]) * scale
    w = max(block["size"] * scale, 2.5)
    detail = f"{size_text(block['size'])}"
    if block["requested_size"]:
        detail += f" ({block['requested_size']} bytes requested)"
    svg.rect(x, top + 8, w, 34, fill, stroke="#555", rx=1,
             title=f"{name + ': ' if name else ''}{block['state']}, {detail}")
    text = {"active_allocated": name or "",
            "active_pending_free": f"{name}, deleted" if name else "deleted",
            "inactive": f"free, with {name}'s" if name else "free"}.get(block["state"], "")
    lines = [line for line in (text, size_text(block["size"])) if line]
    if w >= max(text_width(line, 11) for line in lines) + 6:
        dark = block["state"] == "active_allocated"
        for j, line in enumerate(lines):
            svg.text(x + w / 2, top + 22 + 13 * j, line, size=11, anchor="middle",
                     fill="white" if dark else "#222")
    elif text:  # too narrow: the name below the bar
        svg.text(x, top + 54, f"{text}, {size_text(block['size'])}", size=10, fill="#222")

