"""The scratch memory of CPU kernels run as accinte kernels is kept for the
next kernel (Note [accinte kernel scratch memory], csrc/emulation/KernelScratch.cpp)."""

import gc
import os
import resource
import statistics
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F
import torch_accinte

pytestmark = pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions")

MiB = 2**20
scratch = torch_accinte._C._kernel_scratch_stats


@pytest.fixture(autouse=True)
def two_intra_op_threads():
    """The attention kernels' temporaries are per thread: the figures below are
    for two (make test's workers run one by default)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def attention_step(device, shape=(4, 8, 256, 64)):
    """Flash attention forward and backward: with two threads the CPU's kernels
    allocate about 8 MiB of temporaries in 7 blocks of 128 KiB or more per call."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*shape, generator=g).to(device).requires_grad_() for _ in range(3))

    def step():
        q.grad = k.grad = v.grad = None
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.sum().backward()
        if device == "accinte":
            torch.accinte.synchronize()
        return out, q.grad, k.grad, v.grad

    return step


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_kernels_reuse_the_scratch_earlier_kernels_freed_and_give_the_cpu_bits():
    step, reference = attention_step("accinte"), attention_step("cpu")()
    step()
    before = scratch()
    for _ in range(3):
        results = step()
    after = scratch()
    assert after["misses"] == before["misses"], "a warm step still allocated afresh"
    assert after["hits"] - before["hits"] >= 3 * 7
    for got, want in zip(results, reference):
        assert torch.equal(got.cpu(), want)


def test_a_warm_step_faults_in_no_new_pages():
    # Without the cache, each step mapped its scratch afresh on the worker:
    # 2,016 page faults a step (glibc trimmed the free top of its heap).
    # The median leaves out a step that grew the device's memory pool.
    step = attention_step("accinte")
    step()
    faults = []
    for _ in range(9):
        start = minor_faults()
        step()
        faults.append(minor_faults() - start)
    assert statistics.median(faults) < 100, faults


def test_allocations_outside_kernels_go_to_the_cpu_allocator():
    before = scratch()
    a = torch.randn(512, 512)  # 1 MiB blocks, allocated and freed by the main thread
    b = (a @ a).softmax(dim=0)
    del a, b
    assert scratch() == before


def test_a_block_a_kernel_returns_is_freed_into_the_cache_by_the_thread_that_drops_it():
    # A quantized device tensor copied to the CPU: its CPU result is made in
    # the kernel (LayoutAlias.h) and freed later by the main thread.
    torch.accinte.empty_cache()  # gives the cache's free blocks back
    assert scratch()["cached_bytes"] == 0
    x = torch.randn(512, 1024)
    q = torch.quantize_per_tensor(x.to("accinte"), 0.1, 0, torch.qint8)
    result = q.cpu()
    assert torch.equal(result.int_repr(), torch.quantize_per_tensor(x, 0.1, 0, torch.qint8).int_repr())
    returns = scratch()["returns"]
    del result
    gc.collect()
    assert scratch()["returns"] == returns + 1
    assert scratch()["cached_bytes"] >= 512 * 1024


def test_the_cache_keeps_at_most_64_MiB_of_free_blocks_the_least_recently_freed_go_first():
    torch.accinte.empty_cache()
    for length in (256, 512, 768, 1024, 1536, 2048):
        attention_step("accinte", shape=(8, 8, length, 64))()
    assert 48 * MiB < scratch()["cached_bytes"] <= 64 * MiB
    # The last shape's blocks were freed last: they are still there.
    before = scratch()
    attention_step("accinte", shape=(8, 8, 2048, 64))()
    assert scratch()["misses"] == before["misses"]
    torch.accinte.empty_cache()
    assert scratch()["cached_bytes"] == 0


def test_a_child_forked_while_kernels_run_frees_what_it_inherited():
    # The cache's lock is held across fork(), so that a child forked while a
    # worker holds it does not wait for it forever. The lock is held for well
    # under a microsecond, so this checks that such forks work, not that the
    # race is caught.
    code = textwrap.dedent(
        """
        import os, threading, torch, torch_accinte
        q = torch.quantize_per_tensor(torch.randn(512, 1024).to("accinte"), 0.1, 0, torch.qint8)
        keep = q.cpu()  # a block of the cache, held by the main thread
        x = torch.randn(4, 8, 256, 64, device="accinte")
        stop = False
        def kernels():
            while not stop:
                torch.nn.functional.scaled_dot_product_attention(x, x, x)
        t = threading.Thread(target=kernels)
        t.start()
        for _ in range(20):
            pid = os.fork()
            if pid == 0:
                del keep  # back into the inherited cache, under its lock
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            assert os.WEXITSTATUS(status) == 0
        stop = True
        t.join()
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_torch_accelerator_empty_cache_gives_the_scratch_back_too():
    # One release path: the device allocator's emptyCache runs the cache's
    # release (c10::accinte::add_lifecycle_hooks), whichever API calls it.
    attention_step("accinte")()
    assert scratch()["cached_bytes"] > 0
    torch.accelerator.memory.empty_cache()
    assert scratch()["cached_bytes"] == 0


def test_importing_torch_leaves_the_cpu_allocator_alone_until_the_device_initialises(run_python):
    out = run_python("""
        import torch  # loads accinte through the autoload entry point
        import torch_accinte
        assert not torch.accinte.is_initialized()
        assert not torch_accinte._C._kernel_scratch_stats()["installed"]
        x = torch.randn(256, 1024) @ torch.randn(1024, 256)  # CPU work, plain allocator
        torch.accinte.init()
        assert torch_accinte._C._kernel_scratch_stats()["installed"]
        del x  # allocated before the wrap: goes back to the allocator that made it
        y = torch.randn(4, 8, 256, 64, device="accinte")
        torch.nn.functional.scaled_dot_product_attention(y, y, y).cpu()
        print("ok")
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
