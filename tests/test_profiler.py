"""torch.profiler on accinte: Kineto traces with kernels, copies and memory,
key_averages() device time, and the legacy profiler.

See docs/chapters/profiler.md and Note [accinte profiler]."""

import ctypes
import json
import time
import warnings
from collections import defaultdict

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from held_stream import hold_stream

DEVICE_ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def trace_of(prof, tmp_path):
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return json.loads(path.read_text())["traceEvents"]


def of_cat(events, cat):
    return [e for e in events if e.get("cat") == cat]


def training_step(model, opt, x, target):
    loss = torch.nn.functional.mse_loss(model(x.to("accinte")), target.to("accinte"))
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.cpu()


@pytest.fixture(scope="module")
def step_trace(tmp_path_factory):
    """One profiled training step of a small MLP, as the Chrome trace's events."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4)).to("accinte")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, target = torch.randn(8, 16), torch.randn(8, 4)
    training_step(model, opt, x, target)  # warm-up, outside the trace
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        training_step(model, opt, x, target)
        torch.accinte.synchronize()
    return trace_of(prof, tmp_path_factory.mktemp("step")), prof


def test_training_step_kernels_are_named_by_operator_on_stream_rows(step_trace):
    events, _ = step_trace
    kernels = of_cat(events, "kernel")
    names = {k["name"] for k in kernels}
    assert {"aten::addmm", "aten::relu", "aten::mm", "aten::threshold_backward"} <= names
    assert all(k["pid"] == 0 and k["tid"] == 0 and k["args"]["stream"] == 0 for k in kernels)
    rows = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name" and e["pid"] == 0}
    assert rows[(0, 0)] == "stream 0 (default)"
    process = [e for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
               and e["pid"] == 0]
    assert process and process[0]["args"]["name"] == "accinte 0"


def test_kernels_carry_the_external_id_of_their_cpu_op_and_a_launch_arrow(step_trace):
    events, _ = step_trace
    ops_by_id = {e["args"]["External id"]: e for e in of_cat(events, "cpu_op")}
    flows = defaultdict(dict)
    for e in of_cat(events, "ac2g"):
        flows[e["id"]][e["ph"]] = e
    runtime = {e["args"]["correlation"]: e for e in of_cat(events, "privateuse1_runtime")}
    for k in of_cat(events, "kernel") + of_cat(events, "gpu_memcpy"):
        op = ops_by_id[k["args"]["External id"]]
        # The operator that launched it: same name for an eager kernel, and
        # it began before the kernel did.
        assert op["ts"] <= k["ts"]
        if k["cat"] == "kernel":
            assert op["name"] == k["name"] or k["name"] == "aten::copy_"
        correlation = k["args"]["correlation"]
        arrow = flows[correlation]
        assert arrow["f"]["pid"] == k["pid"] and arrow["f"]["ts"] == k["ts"]
        launch = runtime[correlation]
        assert arrow["s"]["tid"] == launch["tid"] and launch["ts"] <= k["ts"]
        assert launch["name"] in ("acLaunchKernel", "acMemcpyAsync")


def test_host_device_copies_are_memcpy_events_with_byte_counts(step_trace):
    events, _ = step_trace
    copies = {(e["name"].split(" ")[1], e["args"]["bytes"]) for e in of_cat(events, "gpu_memcpy")}
    assert ("HtoD", 8 * 16 * 4) in copies  # x
    assert ("HtoD", 8 * 4 * 4) in copies   # target
    assert ("DtoH", 4) in copies           # loss.cpu()


def test_key_averages_show_device_time_for_mm(step_trace):
    _, prof = step_trace
    mm = [e for e in prof.key_averages() if e.key == "aten::mm"]
    assert mm and mm[0].self_device_time_total > 0
    launched = [e for e in prof.events() if e.name == "aten::mm" and e.kernels]
    assert launched
    assert any(e.device_type == torch.autograd.DeviceType.PrivateUse1 for e in prof.events())


def test_sleep_kernel_lasts_its_time_and_starts_after_its_launch(tmp_path):
    torch.accinte.synchronize()
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        with hold_stream():
            torch.accinte._sleep(50)
            time.sleep(1.0)  # the sleep kernel waits in the queue meanwhile
        torch.accinte.synchronize()
    events = trace_of(prof, tmp_path)
    (sleep,) = [k for k in of_cat(events, "kernel") if k["name"] == "accinte::_sleep"]
    # µs in the trace: the time it ran, not the second it waited in the queue
    # (a loaded machine wakes the worker late: 66 ms seen with two CPU hogs).
    assert 45_000 <= sleep["dur"] < 1_000_000
    (launch,) = [e for e in of_cat(events, "privateuse1_runtime")
                 if e["args"]["correlation"] == sleep["args"]["correlation"]]
    # It may start before the launch call has returned, as on CUDA, never before it began.
    assert launch["name"] == "acLaunchKernel" and launch["ts"] <= sleep["ts"]


def test_two_streams_give_two_rows(tmp_path):
    a = torch.ones(1000, device="accinte")
    side = torch.accinte.Stream()
    # `a` is filled on the default stream: without this wait the side stream may
    # read it before the fill has run, a race in the test as it would be on CUDA.
    side.wait_stream(torch.accinte.current_stream())
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        b = a * 2
        with torch.accinte.stream(side):
            c = a * 3
        torch.accinte.synchronize()
    events = trace_of(prof, tmp_path)
    rows = {(k["pid"], k["tid"]) for k in of_cat(events, "kernel") if k["name"] == "aten::mul"}
    assert rows == {(0, 0), (0, side.stream_id)}
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e["pid"] == 0}
    assert names[side.stream_id] == f"stream {side.stream_id}"
    assert b.sum().item() == 2000 and c.sum().item() == 3000


def test_two_devices_give_two_process_rows(tmp_path):
    if torch.accinte.device_count() < 2:
        pytest.skip("needs two accinte devices (ACCINTE_DEVICE_COUNT)")
    x0 = torch.ones(100, device="accinte:0")
    x1 = torch.ones(100, device="accinte:1")
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        (x0 + 1, x1 + 1)
        torch.accinte.synchronize(0)
        torch.accinte.synchronize(1)
    events = trace_of(prof, tmp_path)
    assert {k["pid"] for k in of_cat(events, "kernel") if k["name"] == "aten::add"} == {0, 1}
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert processes[0] == "accinte 0" and processes[1] == "accinte 1"


def runtime_records_now():
    """How many activity records libaccinte holds (read and dropped)."""
    lib = ctypes.CDLL(torch.accinte.__file__.rsplit("/", 2)[0] + "/lib/libaccinte.so")
    assert lib.acActivityFlushAll() == 0
    buf = (ctypes.c_byte * 4096)()
    count = ctypes.c_size_t()
    assert lib.acActivityGetRecords(buf, 32, ctypes.byref(count)) == 0
    return count.value


def test_cpu_only_profiling_enables_no_runtime_records(tmp_path):
    a = torch.ones(100, device="accinte")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        (a + 1).sum().item()
        recorded = runtime_records_now()
    assert recorded == 0
    assert of_cat(trace_of(prof, tmp_path), "kernel") == []
    with profile(activities=DEVICE_ACTIVITIES):
        (a + 1).sum().item()
        assert runtime_records_now() > 0


def test_profile_memory_shows_accinte_allocations(tmp_path):
    with profile(activities=DEVICE_ACTIVITIES, profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        x = torch.randn(256, 256).to("accinte")
        y = x @ x
        del x, y
        torch.accinte.synchronize()
    events = trace_of(prof, tmp_path)
    memory = [e["args"] for e in events if e.get("name") == "[memory]"
              and e["args"]["Device Type"] == int(torch.autograd.DeviceType.PrivateUse1)]
    sizes = [m["Bytes"] for m in memory]
    assert 256 * 256 * 4 in sizes and -256 * 256 * 4 in sizes  # allocated and freed
    assert all(m["Device Id"] == 0 for m in memory)
    averages = prof.key_averages()
    assert any(e.device_memory_usage != 0 for e in averages)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated upstream, still supported
        prof.export_memory_timeline(str(tmp_path / "memory.json"), device="accinte:0")
    times, sizes_by_category = json.loads((tmp_path / "memory.json").read_text())
    assert times and max(sum(s) for s in sizes_by_category) >= 256 * 256 * 4


def test_legacy_profiler_is_warning_free_and_reports_device_time(capfd):
    x = torch.randn(64, 64, device="accinte")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autograd.profiler.profile(use_device="accinte") as prof:
            (x @ x).relu()
            torch.accinte._sleep(20)
    err = capfd.readouterr().err
    assert "PrivateUse1" not in err and "Exception" not in err, err
    mm = [e for e in prof.key_averages() if e.key == "aten::mm"]
    assert mm and mm[0].device_time_total > 0


def test_twenty_profiles_in_a_row(tmp_path):
    a = torch.ones(10, device="accinte")
    for _ in range(20):
        with profile(activities=DEVICE_ACTIVITIES) as prof:
            (a + 1).cpu()
        assert any(e.name == "aten::add" for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.PrivateUse1)


def test_trace_picture_draws_streams_kernels_copies_and_arrows(step_trace, tmp_path):
    import sys
    import xml.etree.ElementTree as ElementTree
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import trace_svg

    events, _ = step_trace
    svg = ElementTree.fromstring(trace_svg.render(events))
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in svg.iter(ns + "text")]
    assert "accinte 0 · stream 0 (default)" in texts
    titles = [t.text for t in svg.iter(ns + "title")]
    kernels = of_cat(events, "kernel")
    assert sum(1 for t in titles if t.startswith("aten::")) >= len(kernels)
    assert sum(1 for t in titles if t.startswith("Memcpy HtoD")) == 2
    arrows = [line for line in svg.iter(ns + "line") if line.get("marker-end")]
    assert len(arrows) == len(kernels) + len(of_cat(events, "gpu_memcpy"))
