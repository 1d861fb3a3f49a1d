"""The examples run as a user would run them: each as a script, in a process of
its own (a child of the fork server, forkserver.py); the distributed one under
torchrun."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import forkserver

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script, *args):
    return forkserver.run_python([str(EXAMPLES / script), *args], timeout=600)


def test_train_mlp_reaches_the_cpu_loss():
    out = run("train_mlp.py", "--epochs", "3", "--samples", "1024")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "accinte reached the CPU's loss" in out.stdout


def test_usage_example_runs_as_written():
    out = run("usage.py")
    assert out.returncode == 0, out.stderr
    assert "AccInte backend is available!" in out.stdout
    assert "Device of y: accinte:0" in out.stdout
    assert "Device of z: cpu" in out.stdout
    assert "tensor([[3., 4.],\n        [5., 6.]], device='accinte:0')" in out.stdout


# Each example below asserts its own results; the test checks that it ran to
# the end and printed its conclusion.
SELF_CHECKING = [
    ("custom_op_cpp.py", "custom_abs matches the CPU: forward, backward, meta and fake shapes"),
    ("custom_op_python.py", "examples::softsign matches the CPU formula"),
    ("amp.py", "autocast and GradScaler work on accinte"),
    ("streams_events.py", "streams and events behave as on CUDA"),
    ("memory_stats.py", "memory statistics, caching and snapshots work on accinte"),
    ("profile_training.py", "the profiler sees accinte kernels, copies and memory"),
    ("bad_input.py", "bad input is refused at the call and the device keeps working"),
    ("cpu_exact.py", "accinte gives the CPU's exact answers"),
    ("fidelity.py", "the asynchronous engine behaves as the CPU"),
    ("libraries.py", "libraries train on accinte as on the CPU"),
    ("python_kernels_and_waits.py", "Python kernels and host waits share the GIL without deadlock"),
    ("compile_model.py", "torch.compile works on accinte and matches the CPU"),
    ("share_across_processes.py", "accinte tensors are shared across processes as CUDA tensors are"),
    ("kernel_scratch.py", "kernels reuse their scratch memory and give the CPU's bits"),
    ("memory_pools.py", "memory pools and allocator settings work on accinte as on CUDA"),
]


@pytest.mark.parametrize("script, conclusion", SELF_CHECKING)
def test_example_runs_and_checks_itself(script, conclusion):
    out = run(script)
    assert out.returncode == 0, f"{script} failed:\n{out.stdout}\n{out.stderr}"
    assert conclusion in out.stdout, out.stdout


# The distributed example runs as users launch it: under torchrun, on one
# machine (--standalone) and as two "nodes" rendezvousing on 127.0.0.1.
DDP_EXAMPLE = str(EXAMPLES / "distributed_ddp.py")
DDP_CONCLUSION = "DDP on 2 accinte processes matched single-process CPU training"
TORCHRUN_TIMEOUT = 240


def torchrun(*args):
    # Loopback only: Gloo (under accl) would otherwise use the host name's address.
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    return subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *args, DDP_EXAMPLE],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(procs):
    """Waits for every launch (bounded); kills the rest if one overruns."""
    try:
        return [p.communicate(timeout=TORCHRUN_TIMEOUT) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


def test_ddp_example_under_torchrun_standalone():
    launch = torchrun("--standalone", "--nproc-per-node=2")
    [(out, err)] = finish([launch])
    assert launch.returncode == 0, out + err[-5000:]
    assert DDP_CONCLUSION in out, out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_example_on_two_nodes_of_one_machine():
    rendezvous = ["--nnodes=2", "--nproc-per-node=1", "--master-addr=127.0.0.1",
                  f"--master-port={free_port()}"]
    nodes = [torchrun(*rendezvous, f"--node-rank={rank}") for rank in (0, 1)]
    outputs = finish(nodes)
    report = "\n".join(f"--- node {r} (exit {p.returncode})\n{o}\n{e[-4000:]}"
                       for r, (p, (o, e)) in enumerate(zip(nodes, outputs)))
    assert all(p.returncode == 0 for p in nodes), report
    assert DDP_CONCLUSION in outputs[0][0], report


def test_every_example_is_tested_and_listed():
    tested = {"train_mlp.py", "usage.py", "distributed_ddp.py"} | {script for script, _ in SELF_CHECKING}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested
    listed = (EXAMPLES / "README.md").read_text()
    assert all(f"`{name}`" in listed for name in tested)
