"""Load that must leave nothing behind: out-of-memory cycles, many threads
on separate and shared streams checked against the CPU, and producers that
outrun the device (the launch queue is bounded, Note [accinte launch queue
depth])."""


def test_out_of_memory_and_recover_1000_times(cases):
    # CUDA: every failed allocation is a torch.OutOfMemoryError and the
    # caching allocator is as before; accinte's statistics and the process's
    # resident memory come back to their baseline.
    cases.check("""
        torch.ones(1, device="accinte"); torch.accinte.synchronize()
        torch.accinte.empty_cache()
        base_rss = rss_bytes()
        torch.accinte.reset_peak_memory_stats()
        for i in range(1000):
            keep = torch.empty(1 << 18, device="accinte")          # 1 MiB
            try:
                torch.empty(1 << 30, device="accinte")              # 4 GiB: the whole device
            except torch.OutOfMemoryError:
                pass
            else:
                raise AssertionError("no OutOfMemoryError")
            keep.add_(i)
            del keep
        stats = torch.accinte.memory_stats()
        assert stats["num_ooms"] == 1000, stats["num_ooms"]
        assert stats["allocated_bytes.all.current"] == 0
        assert stats["active_bytes.all.current"] == 0
        torch.accinte.empty_cache()
        assert torch.accinte.memory_reserved() == 0
        free, total = torch.accinte.mem_get_info()
        assert free == total, (free, total)
        gc.collect()
        grown = rss_bytes() - base_rss
        assert grown < 32 << 20, f"RSS grew by {grown >> 20} MiB"
    """, timeout=120)


THREADS = """
    ITERATIONS = 10_000
    def worker(k, results, stream):
        a = torch.zeros(16, device="accinte")
        with torch.accinte.stream(stream):
            a = torch.zeros(16, device="accinte")
            for i in range(ITERATIONS):
                a.add_((i + k) % 7)
            results[k] = a.cpu()
    expected = [torch.full((16,), float(sum((i + k) % 7 for i in range(ITERATIONS)))) for k in range(8)]
"""


def test_8_threads_10k_ops_on_separate_streams(cases):
    cases.check(THREADS + """
    results = [None] * 8
    streams = [torch.accinte.Stream() for _ in range(8)]
    threads = [threading.Thread(target=worker, args=(k, results, streams[k])) for k in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    for k in range(8):
        assert torch.equal(results[k], expected[k]), (k, results[k], expected[k])
    """, timeout=150)


def test_8_threads_10k_ops_on_one_shared_stream(cases):
    cases.check(THREADS + """
    results = [None] * 8
    shared = torch.accinte.Stream()
    threads = [threading.Thread(target=worker, args=(k, results, shared)) for k in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    for k in range(8):
        assert torch.equal(results[k], expected[k]), (k, results[k], expected[k])
    """, timeout=150)


def test_one_thread_launching_without_synchronising_is_held_back(cases):
    # The case: small operators launched in a loop that never
    # synchronises, faster than the device runs them (kept busy for 1.5 s
    # first). Each launch past the queue's depth waits, so the process does
    # not grow with the launches (unbounded, these 2 s queue ~250k kernels
    # and ~300 MiB).
    cases.check("""
        from torch_accinte import _C
        x = torch.zeros(8, device="accinte")
        torch.accinte.synchronize()
        base_rss = rss_bytes()
        peak, launched = base_rss, 0
        _C._sleep(1500)
        start = time.monotonic()
        while time.monotonic() - start < 2.0:
            for _ in range(1000):
                x.add_(1)
            launched += 1000
            peak = max(peak, rss_bytes())
        torch.accinte.synchronize()
        assert torch.equal(x.cpu(), torch.full((8,), float(launched)))
        grown = peak - base_rss
        assert grown < 64 << 20, f"RSS grew by {grown >> 20} MiB for {launched} launches"
    """, timeout=120)


def test_producers_are_held_back_by_a_full_queue(cases):
    # Four threads launch small kernels as fast as they can on streams the
    # device keeps busy for a while: each launch past the queue's depth (1024)
    # waits, so the launches take at least as long as the busy spell and the
    # process does not grow with the number of launches.
    cases.check("""
        from torch_accinte import _C
        BUSY_MS, LAUNCHES = 1500, 4000
        streams = [torch.accinte.Stream() for _ in range(4)]
        tensors = [torch.zeros(8, device="accinte") for _ in range(4)]
        torch.accinte.synchronize()
        base_rss = rss_bytes()
        peak = [0]
        def produce(k):
            with torch.accinte.stream(streams[k]):
                _C._sleep(BUSY_MS)
                for i in range(LAUNCHES):
                    tensors[k].add_(1)
                    if i % 500 == 0:
                        peak[0] = max(peak[0], rss_bytes())
        start = time.monotonic()
        threads = [threading.Thread(target=produce, args=(k,)) for k in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
        launched = time.monotonic() - start
        torch.accinte.synchronize()
        assert launched >= 0.9 * BUSY_MS / 1000, f"launches returned after {launched:.2f} s"
        for t in tensors:
            assert torch.equal(t.cpu(), torch.full((8,), float(LAUNCHES)))
        grown = peak[0] - base_rss
        assert grown < 64 << 20, f"RSS grew by {grown >> 20} MiB"
    """, timeout=120)


def test_full_queue_of_python_kernels_does_not_deadlock(cases):
    # A CPU kernel written in Python runs on the stream's worker, which takes
    # the GIL; a launch into a full queue must wait without holding it.
    cases.check("""
        lib = torch.library.Library("robust_gil", "DEF")
        lib.define("slow_double(Tensor x) -> Tensor")
        def slow_double(x):
            time.sleep(0.001)
            return x * 2
        lib.impl("slow_double", slow_double, "CPU")
        lib.impl("slow_double", lambda x: torch.empty_like(x), "Meta")
        x = torch.arange(4.0, device="accinte")
        copy = torch.empty(4, device="accinte")
        for _ in range(1500):                 # more than the queue's 1024
            y = torch.ops.robust_gil.slow_double(x)
            # PyTorch's binding of UntypedStorage.copy_ keeps the GIL while
            # it launches the copy.
            copy.untyped_storage().copy_(x.untyped_storage())
        torch.accinte.synchronize()
        assert torch.equal(y.cpu(), torch.arange(4.0) * 2)
        assert torch.equal(copy.cpu(), torch.arange(4.0))
    """, timeout=60)
