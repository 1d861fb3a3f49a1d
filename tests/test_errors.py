"""Bad input gives a clear Python exception and the device keeps working.

(Bad device indices, out-of-memory and tensors on different devices are also
covered next to the feature they belong to: test_device.py, test_memory.py,
test_ops.py.)
"""

import multiprocessing as mp

import pytest
import torch


def test_fork_after_init_raises_clearly_in_child(run_python):
    out = run_python(
        """
        import os, torch
        x = torch.ones(3, device="accinte")
        pid = os.fork()
        if pid == 0:
            for attempt in ("new", "old"):
                try:
                    torch.ones(2, device="accinte") if attempt == "new" else x.cpu()
                    print(attempt, "NO ERROR")
                except RuntimeError as e:
                    print(attempt, "error:", e)
            print("bad fork", torch.accinte._is_in_bad_fork())
            os._exit(0)
        os.waitpid(pid, 0)
        print("parent", x.sum().item())
        """
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    new = next(line for line in lines if line.startswith("new"))
    old = next(line for line in lines if line.startswith("old"))
    assert "Cannot re-initialize accinte in forked subprocess" in new and "spawn" in new
    assert "forked child" in old and "spawn" in old
    assert "bad fork True" in lines
    assert "parent 3.0" in lines


def test_fork_from_c_after_init_raises_clearly_in_child(run_python):
    # A library may call fork() itself: Python's os.register_at_fork hooks do
    # not run then, PyTorch's pthread_atfork handler does.
    out = run_python(
        """
        import ctypes, os, torch
        x = torch.ones(3, device="accinte")
        pid = ctypes.PyDLL(None).fork()
        if pid == 0:
            try:
                torch.ones(2, device="accinte")
                print("NO ERROR", flush=True)
            except RuntimeError as e:
                print("error:", e, flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        print("parent", x.sum().item())
        """
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any("Cannot re-initialize accinte in forked subprocess" in line for line in lines), lines
    assert "parent 3.0" in lines


def test_fork_before_init_is_fine(run_python):
    out = run_python(
        """
        import os, torch
        pid = os.fork()
        if pid == 0:
            print("child", torch.ones(2, device="accinte").sum().item(), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        """
    )
    assert out.returncode == 0, out.stderr
    assert "child 2.0" in out.stdout


def _square_on_accinte(values, queue):
    import torch

    queue.put((torch.tensor(values, device="accinte") ** 2).cpu().tolist())


def test_spawn_works_after_init():
    torch.ones(1, device="accinte")  # the parent has initialised accinte
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=_square_on_accinte, args=([1.0, 2.0, 3.0], queue))
    p.start()
    result = queue.get(timeout=120)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert result == [1.0, 4.0, 9.0]


def test_errors_do_not_break_the_device():
    x = torch.ones(4, device="accinte")
    with pytest.raises(RuntimeError):
        x.view(3)  # invalid view
    with pytest.raises(RuntimeError):
        torch.empty(1, device="accinte:99")
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(2**60, dtype=torch.uint8, device="accinte")
    with pytest.raises(IndexError):
        x[10].item()
    assert (x * 3).sum().item() == 12
    torch.accinte.synchronize()
