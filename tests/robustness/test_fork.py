"""fork() while other threads allocate: no child may hang on a lock a parent
thread held at the moment of fork (Note [accinte fork safety])."""

import pytest


# GCC 12's libasan takes no lock of its own around fork(): a child forked while
# a parent thread is inside ASan's allocator may hang in it for good (seen once
# in ~100 forks, in __sanitizer::StackDepot under free(); google/sanitizers#774).
@pytest.mark.not_under_sanitizer(
    "a child forked while a parent thread is inside ASan's allocator hangs on ASan's own lock "
    "(GCC 12's libasan does not lock it around fork; google/sanitizers#774)")
def test_children_free_inherited_tensors_while_parent_threads_allocate(cases):
    cases.check("""
        import signal
        FORKS = 24
        inherited = [torch.ones(1000 + i, device="accinte") for i in range(8)]
        pinned = torch.ones(1000).pin_memory()
        stop = threading.Event()

        def churn(device):
            # Backward runs on autograd's device threads, which allocate and
            # free without the GIL: they may hold the allocator's locks at
            # the moment the main thread forks.
            w = torch.ones(4096, device=device, requires_grad=True)
            while not stop.is_set():
                time.sleep(0)  # lets the forking thread have the GIL often
                if device == "cpu":
                    y = torch.empty(64).pin_memory()
                else:
                    (w * 2).sum().backward()
                    y = torch.empty(4096, device=device)
                del y

        threads = [threading.Thread(target=churn, args=(d,)) for d in ("accinte:0", "accinte:1", "cpu")]
        for t in threads:
            t.start()
        hung = 0
        for _ in range(FORKS):
            pid = os.fork()
            if pid == 0:
                # The child frees what it inherited, then fails cleanly if it
                # touches the device, as a child of a CUDA process does.
                inherited.clear()
                del pinned
                torch.accinte.empty_cache()          # does nothing here, as on CUDA
                try:
                    torch.accinte.memory_stats()
                    os._exit(4)
                except RuntimeError:
                    pass
                try:
                    torch.ones(1, device="accinte")
                    os._exit(3)
                except RuntimeError:
                    os._exit(0)
            deadline = time.monotonic() + 10
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    assert os.waitstatus_to_exitcode(status) == 0, status
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    hung += 1
                    break
                time.sleep(0.001)
        stop.set()
        for t in threads:
            t.join()
        assert hung == 0, f"{hung} of {FORKS} children hung"
        assert torch.equal(inherited[0].cpu(), torch.ones(1000))
    """, timeout=120)
