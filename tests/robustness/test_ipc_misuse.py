"""IPC misuse: a message consumed twice cannot take the share's count below
zero (which made empty_cache and every later share fail); a receiver killed
while it holds a share leaves the sender working (Note [IPC reference
counts]: the sender cannot tell a dead receiver from a slow one, so it keeps
the share's memory until it exits, as CUDA does)."""


def test_message_consumed_twice(cases):
    cases.check("""
        import pickle
        import torch.multiprocessing.reductions as mpr
        from multiprocessing.reduction import ForkingPickler
        from torch_accinte import _C
        from torch_accinte.accinte import reductions

        t = torch.arange(8.0, device="accinte")
        message = bytes(ForkingPickler.dumps(t))
        counter = reductions._sent[-1][1]
        first = pickle.loads(message)
        second = pickle.loads(message)
        assert torch.equal(first.cpu(), torch.arange(8.0)) and torch.equal(second.cpu(), first.cpu())
        del first, second
        gc.collect()
        assert _C._ipc_counter_value(counter) == 0
        torch.accinte.empty_cache()             # raised once the count was -1
        again = pickle.loads(bytes(ForkingPickler.dumps(t)))
        assert torch.equal(again.cpu(), torch.arange(8.0))
    """)


def test_receiver_killed_while_holding_a_share(cases):
    cases.check("""
        import signal, subprocess, sys
        from multiprocessing.reduction import ForkingPickler
        from torch_accinte import _C
        from torch_accinte.accinte import reductions

        t = torch.arange(1 << 18, dtype=torch.float32, device="accinte")   # 1 MiB
        torch.accinte.synchronize()
        message = bytes(ForkingPickler.dumps(t))
        counter = reductions._sent[-1][1]
        receiver = subprocess.Popen([sys.executable, "-c", (
            "import pickle, sys, time, torch\\n"
            "t = pickle.loads(sys.stdin.buffer.read())\\n"
            "t.add_(1); torch.accinte.synchronize()\\n"
            "print('holding', flush=True)\\n"
            "time.sleep(600)\\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        receiver.stdin.write(message)
        receiver.stdin.close()
        assert receiver.stdout.readline().strip() == b"holding"
        receiver.send_signal(signal.SIGKILL)
        receiver.wait()
        # The receiver's write is there; the sender goes on working.
        assert torch.equal(t[:4].cpu(), torch.arange(1.0, 5.0))
        del t
        gc.collect()
        torch.accinte.ipc_collect()
        torch.accinte.empty_cache()
        # The dead receiver's reference stays: the share's memory is kept.
        assert _C._ipc_counter_value(counter) == 1
        assert torch.accinte.memory_allocated() >= 1 << 20
        # Later shares, allocations and releases are unaffected.
        u = torch.ones(8, device="accinte")
        again = __import__("pickle").loads(bytes(ForkingPickler.dumps(u)))
        assert torch.equal(again.cpu(), torch.ones(8))
        del again
        gc.collect()
        assert _C._ipc_counter_value(reductions._sent[-1][1]) == 0
    """, timeout=120)
