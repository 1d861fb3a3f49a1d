"""A graph captured over tensors allocated outside the capture keeps their
memory for its life (Note [accinte graph argument lifetime]): deleting them
and emptying the cache before a replay is safe, and the replay computes what
the capture meant. CUDA leaves this to the user (a replay then reads freed
memory); accinte never crashes here."""


def test_replay_after_inputs_deleted_and_cache_emptied(cases):
    cases.check("""
        x = torch.arange(1 << 20, dtype=torch.float32, device="accinte")   # 4 MiB, outside
        y = torch.zeros(1 << 20, device="accinte")
        torch.accinte.synchronize()
        g = torch.accinte.Graph()
        with torch.accinte.graph(g):
            y.add_(x)
        captured_view = y[:4]
        del x
        gc.collect()
        torch.accinte.empty_cache()
        # Memory churn that would reuse a freed block.
        junk = [torch.full((1 << 20,), -1.0, device="accinte") for _ in range(4)]
        for _ in range(3):
            g.replay()
        torch.accinte.synchronize()
        assert torch.equal(captured_view.cpu(), 3 * torch.arange(4.0))
        del junk, captured_view, y
        allocated = torch.accinte.memory_allocated()
        assert allocated >= 4 << 20          # x is still held by the graph
        del g
        gc.collect()
        torch.accinte.empty_cache()
        assert torch.accinte.memory_allocated() == 0
    """)


def test_graph_does_not_hold_its_own_pool_allocations(cases):
    # Tensors allocated inside the capture come from the graph's pool and
    # are not kept by reference: the pool is reused within the capture as usual.
    cases.check("""
        x = torch.ones(1 << 18, device="accinte")
        torch.accinte.synchronize()
        g = torch.accinte.Graph()
        with torch.accinte.graph(g):
            for _ in range(8):
                t = x * 2            # freed at the next iteration: reused in the pool
            out = t + 1
        g.replay()
        torch.accinte.synchronize()
        assert torch.equal(out.cpu(), torch.full((1 << 18,), 3.0))
        from torch_accinte import _C
        pool_bytes = _C._graph_pool_reserved_bytes(0, g.pool())
        assert pool_bytes <= 6 << 20, f"the pool holds {pool_bytes >> 20} MiB for 2-3 live MiB"
    """)
