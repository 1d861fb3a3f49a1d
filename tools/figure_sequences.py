"""Sequence diagrams whose every name is the code's: the life of an operator
call (docs/chapters/img/streams-operator-call.svg) and one collective's data
path (docs/chapters/img/distributed-data-path.svg).

Each step names the functions it shows and the file each is in; drawing
checks that every name is still in its file and stops, naming the step,
when one is not, so a rename in the code fails `make figures` (and
tests/test_figures.py) instead of leaving a stale picture.

    python tools/figures.py streams-operator-call distributed-data-path
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from figure_svg import DRIVER, GREY, HOST, PYTHON, WIDTH, WORKER, Svg, text_width

OTHER = "#f7e1e1"  # another process


@dataclass(frozen=True)
class Lane:
    key: str
    title: str
    where: str  # the file or folder it stands for
    fill: str  # what runs it: HOST, WORKER, DRIVER, PYTHON or OTHER


@dataclass(frozen=True)
class Step:
    src: str
    dst: str
    label: str
    names: tuple[tuple[str, str], ...] = ()  # (file, text that must be in it)
    style: str = "call"  # call, return (dashed back), alt (dashed: another way)


@dataclass(frozen=True)
class Note:
    text: str


def check_names(repo: Path, steps: list[Step | Note]) -> None:
    """Every (file, text) a step names is in the repository (whitespace
    ignored, so that rewrapping a line changes nothing)."""
    missing = []
    for step in steps:
        for path, text in getattr(step, "names", ()):
            file = repo / path
            code = re.sub(r"\s+", "", file.read_text()) if file.is_file() else ""
            if re.sub(r"\s+", "", text) not in code:
                missing.append(f"step {step.label!r}: {text!r} is not in {path}")
    if missing:
        raise SystemExit("the figure names code that is gone:\n  " + "\n  ".join(missing))


def render(repo: Path, source: str, caption: list[str], lanes: list[Lane],
           steps: list[Step | Note], groups: list[tuple[str, str]]) -> str:
    check_names(repo, steps)
    svg = Svg(source)
    margin, top, row = 10, 30 + 16 * len(caption), 27
    pitch = (WIDTH - 2 * margin) / len(lanes)
    xs = {lane.key: margin + pitch * (i + 0.5) for i, lane in enumerate(lanes)}
    for i, line in enumerate(caption):
        svg.text(margin, 18 + 16 * i, line, fill=GREY)
    bottom = top + 44 + row * len(steps) + 10
    for lane in lanes:
        x = xs[lane.key]
        svg.rect(x - pitch / 2 + 3, top, pitch - 6, bottom - top, lane.fill, stroke="none")
        svg.text(x, top + 16, lane.title, anchor="middle", bold=True)
        svg.text(x, top + 31, lane.where, size=10, anchor="middle", mono=True, fill=GREY)
        svg.line(x, top + 38, x, bottom, color="#aaa", dash=True)
    y = top + 44
    for step in steps:
        y += row
        if isinstance(step, Note):
            svg.text(margin + 4, y - 6, step.text, size=11, italic=True, fill=GREY)
            svg.line(margin, y - 1, WIDTH - margin, y - 1, color="#ccc")
            continue
        draw_step(svg, step, xs, y)
    legend_y = bottom + 20
    svg.legend(margin, legend_y, groups)
    return svg.render(legend_y + 12)


def draw_step(svg: Svg, step: Step, xs: dict[str, float], y: float) -> None:
    x1, x2 = xs[step.src], xs[step.dst]
    title = "; ".join(f"{text} in {path}" for path, text in step.names) or None
    dashed = step.style in ("return", "alt")
    color = "#1f5fa6" if step.style == "alt" else "#333"
    if x1 == x2:  # a call within one lane: a small loop, the label beside it
        svg.path(f"M{x1:.1f},{y - 12:.1f} h14 v8 h-12", color=color, arrow=True, dash=dashed)
        place_label(svg, x1 + 20, x1 - 6, y - 5, step.label)
    else:
        svg.line(x1, y - 2, x2 + (-3 if x2 > x1 else 3), y - 2, color=color, arrow=True,
                 dash=dashed, width=1.2, title=title)
        place_label(svg, min(x1, x2) + 6, max(x1, x2) - 6, y - 7, step.label)


def place_label(svg: Svg, start: float, end: float, y: float, text: str) -> None:
    """A label that begins at `start`, or, if it would run off the picture,
    one that ends at `end`."""
    size = 11
    if start + text_width(text, size) <= WIDTH - 8:
        svg.label(start, y, text, size=size)
    else:
        svg.label(max(end, text_width(text, size) + 8), y, text, size=size, anchor="end")


FALLBACK = "csrc/emulation/fallback/Fallback.cpp"
KERNEL = "csrc/runtime/AccInteKernel.cpp"
STREAM = "third_party/accinte/src/stream.cpp"
COPY = "csrc/aten/native/Copy.cpp"
RUNTIME_STREAM = "csrc/runtime/AccInteStream.cpp"

OPERATOR_LANES = [
    Lane("py", "Python", "y = x + 1; y.cpu()", PYTHON),
    Lane("disp", "dispatcher", "c10::Dispatcher", HOST),
    Lane("ac", "accinte kernel", "csrc/emulation, aten", HOST),
    Lane("rt", "runtime", "csrc/runtime/", HOST),
    Lane("q", "stream", "libaccinte Stream", DRIVER),
    Lane("w", "stream's worker", "Stream::runWorker", WORKER),
]

OPERATOR_STEPS: list[Step | Note] = [
    Note("on the Python thread: x + 1 is queued, nothing waits"),
    Step("py", "disp", "x + 1 → aten::add.Tensor"),
    Step("disp", "disp", "AutogradPrivateUse1 → ADInplaceOrView → PrivateUse1"),
    Step("disp", "ac", "accinte_fallback(op, stack)",
         ((FALLBACK, "void accinte_fallback("),)),
    Step("ac", "ac", "plan_for(op), lookup_launch(key): the signature's record",
         ((FALLBACK, "plan_for(op)"), (FALLBACK, "lookup_launch(key)"))),
    Step("ac", "ac", "launch_async: cpu_aliases, device_outputs (y allocated)",
         ((FALLBACK, "bool launch_async("), (FALLBACK, "cpu_aliases("),
          (FALLBACK, "device_outputs("))),
    Step("ac", "rt", "queue_kernel → launch_kernel(stream, closure)",
         ((FALLBACK, "void queue_kernel("), (FALLBACK, "c10::accinte::launch_kernel("))),
    Step("rt", "q", "acLaunchKernelNamed(…, &run_kernel) → Stream::enqueue",
         ((KERNEL, "acLaunchKernelNamed(stream.stream(), &run_kernel"),
          (STREAM, "acError_t Stream::enqueue("))),
    Step("rt", "rt", "release_finished_kernels(): earlier closures",
         ((KERNEL, "void release_finished_kernels()"),)),
    Step("rt", "py", "returns: y exists, its values not computed yet", style="return"),
    Note("on the stream's worker, after ACCINTE_LAUNCH_LATENCY_US on an idle stream"),
    Step("q", "w", "Stream::runWorker → runBatch → runTask",
         ((STREAM, "void Stream::runWorker("), (STREAM, "void Stream::runBatch("),
          (STREAM, "acError_t runTask("), (STREAM, "ACCINTE_LAUNCH_LATENCY_US"))),
    Step("w", "w", "run_kernel → FallbackKernel in CpuKernelScope",
         ((KERNEL, "int run_kernel("), (FALLBACK, "class FallbackKernel"),
          (FALLBACK, "CpuKernelScope scope(caller_)"))),
    Step("w", "w", "the CPU's add.out on CPU aliases of device memory",
         (("csrc/emulation/CpuAlias.h", "cpu_alias"),)),
    Step("w", "w", "retired_kernels().push(closure): never destroyed here",
         ((KERNEL, "retired_kernels().push("),)),
    Note("back on the Python thread: y.cpu() waits for the stream"),
    Step("py", "disp", "y.cpu() → aten::_copy_from"),
    Step("disp", "ac", "_copy_from(self, dst, non_blocking)",
         ((COPY, "at::Tensor _copy_from("),)),
    Step("ac", "q", "enqueue_copy → acMemcpyAsync(dst, src, n, …, stream)",
         ((COPY, "void enqueue_copy("), (COPY, "acMemcpyAsync("))),
    Step("ac", "rt", "finish_host_copy → AccInteStream::synchronize()",
         ((COPY, "void finish_host_copy("), (RUNTIME_STREAM, "void AccInteStream::synchronize()"))),
    Step("rt", "q", "HostWaitGuard (GIL released); acStreamSynchronize → Stream::waitIdle",
         ((RUNTIME_STREAM, "HostWaitGuard no_gil"),
          ("third_party/accinte/src/stream_api.cpp", "s->waitIdle()"),
          (STREAM, "void Stream::waitIdle("))),
    Step("q", "rt", "or Stream::runPendingHere: untaken tasks run on this thread",
         ((STREAM, "bool Stream::runPendingHere("),), style="alt"),
    Step("q", "rt", "the copy has finished: the stream is idle", style="return"),
    Step("rt", "rt", "release_finished_kernels(): closures destroyed on the host",
         ((RUNTIME_STREAM, "release_finished_kernels();"),)),
    Step("rt", "py", "y's values, on the host", style="return"),
]

PG = "csrc/distributed/ProcessGroupACCL.cpp"
COLLECTIVES = "csrc/distributed/ProcessGroupACCLCollectives.cpp"
SHM = "csrc/distributed/ShmEngine.cpp"

DISTRIBUTED_LANES = [
    Lane("py", "Python", "dist.all_reduce(t)", PYTHON),
    Lane("pg", "ProcessGroupACCL", "csrc/distributed/", HOST),
    Lane("cur", "caller's stream", "current stream", DRIVER),
    Lane("comm", "comm. stream", "high-priority pool", DRIVER),
    Lane("k", "CollectiveKernel", "on comm's worker", WORKER),
    Lane("eng", "CollectiveEngine", "ShmEngine / Gloo", WORKER),
    Lane("peer", "other rank", "another process", OTHER),
]

DISTRIBUTED_STEPS: list[Step | Note] = [
    Note("on the calling thread: checked at the call, then queued; the host does not wait"),
    Step("py", "pg", "ProcessGroupACCL::allreduce(tensors, opts)",
         ((COLLECTIVES, "c10::intrusive_ptr<Work> ProcessGroupACCL::allreduce("),)),
    Step("pg", "pg", "check_reduce_op, check_call: a bad call raises here",
         ((COLLECTIVES, "check_reduce_op(\"allreduce\""), (PG, "check_call(name, tensors)"))),
    Step("pg", "pg", "enqueue(OpType::ALLREDUCE, \"accl::allreduce\", …)",
         ((PG, "c10::intrusive_ptr<Work> ProcessGroupACCL::enqueue("),
          (COLLECTIVES, "\"accl::allreduce\""))),
    Step("pg", "cur", "ready.record(current)", ((PG, "ready.record(current)"),)),
    Step("pg", "comm", "ready.block(comm): after the caller's work",
         ((PG, "ready.block(comm)"), (PG, "getStreamFromPool(/*isHighPriority=*/true"))),
    Step("pg", "pg", "allocator->recordStream(storage, comm) for every tensor",
         ((PG, "allocator->recordStream(t.storage().data_ptr(), comm)"),)),
    Step("pg", "comm", "launch_cpu_kernel(comm, CollectiveKernel(…))",
         ((PG, "launch_cpu_kernel("), (PG, "CollectiveKernel(shared_,"))),
    Step("pg", "comm", "end->record(comm)", ((PG, "end->record(comm)"),)),
    Step("pg", "py", "WorkACCL, its Future completed with the outputs",
         ((PG, "future->markCompleted("), (PG, "c10::make_intrusive<WorkACCL>(")),
         style="return"),
    Step("py", "cur", "work.wait(): end_->block(current stream), the host goes on",
         (("csrc/distributed/WorkACCL.cpp", "end_->block(stream)"),)),
    Note("on the communication stream's worker, once the caller's stream reached the ready event"),
    Step("comm", "k", "CollectiveKernel::operator() in CpuKernelScope",
         ((PG, "class ProcessGroupACCL::CollectiveKernel"), (PG, "void operator()()"))),
    Step("k", "eng", "launch(*shared_->engine) → ShmEngine::allreduce",
         ((PG, "launch(*shared_->engine)"), (SHM, "EngineOp ShmEngine::allreduce("))),
    Step("eng", "peer", "ShmSegment::sync(\"allreduce\"): chunks via the memfd",
         ((SHM, "seg.sync(\"allreduce\")"),
          ("csrc/distributed/ShmSegment.h", "class ShmSegment"))),
    Step("peer", "eng", "its shares reduced in rank order, the same bits", style="return"),
    Step("eng", "peer", "what shm lacks: wrapped() → GlooEngine (TCP)",
         ((SHM, "wrapped().allreduce(tensors, opts)"),
          ("csrc/distributed/ForwardingEngine.h", "class ForwardingEngine"),
          ("csrc/distributed/GlooEngine.h", "class GlooEngine")), style="alt"),
    Step("k", "k", "op->wait() for every started operation",
         ((PG, "op->wait()"),)),
    Step("k", "comm", "returns; a failure fails the stream and the group", style="return"),
    Step("comm", "cur", "end event reached: the caller's stream runs on", style="return"),
]


def render_operator_call(repo: Path) -> str:
    return render(repo, "tools/figure_sequences.py (names checked against the sources)",
                  ["One operator call, y = x + 1, then y.cpu(): which thread runs what.",
                   "Each label is a function of the code; hover an arrow for its file."],
                  OPERATOR_LANES, OPERATOR_STEPS,
                  [("Python", PYTHON), ("the calling thread", HOST),
                   ("libaccinte's stream", DRIVER), ("the stream's worker", WORKER)])


def render_distributed(repo: Path) -> str:
    return render(repo, "tools/figure_sequences.py (names checked against the sources)",
                  ["One all_reduce on rank 0 with the shm engine (the default on one host);",
                   "each label is a function of the code; hover an arrow for its file."],
                  DISTRIBUTED_LANES, DISTRIBUTED_STEPS,
                  [("Python", PYTHON), ("the calling thread", HOST), ("streams", DRIVER),
                   ("the comm. stream's worker", WORKER), ("another rank", OTHER)])
