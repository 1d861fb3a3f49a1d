"""IPC misuse: a message consumed twice cannot take the share's count below
zero (which made empty_cache and every later share fail); a receiver killed
while it holds a share leaves the sender working (Note [IPC reference
counts]: the sender cannot tell a dead receiver from a slow one, so it keeps
the share's memory until it exits, as CUDA does); a sender killed before
the work its share's event covers ran ends the receiver's wait with an error
(Note [IPC events])."""


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


def test_sender_killed_before_its_queued_work_ran(cases):
    # The receiver's stream waits for the share's event; the sender dies with
    # the work before it still queued. The wait ends with a clear error at the
    # receiver's next synchronization instead of hanging, and the device works on.
    cases.check("""
        import pickle, signal, subprocess, sys
        sender = subprocess.Popen([sys.executable, "-c", (
            "import os, sys, torch\\n"
            "from multiprocessing.reduction import ForkingPickler\\n"
            "t = torch.arange(8.0, device='accinte')\\n"
            "torch.accinte._sleep(60000)\\n"
            "sys.stdout.buffer.write(bytes(ForkingPickler.dumps(t.abs())))\\n"
            "sys.stdout.buffer.flush()\\n"
            "os.close(1)\\n"  # the end of the message
            "sys.stdin.read()\\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        received = pickle.loads(sender.stdout.read())
        copy = received.clone()  # queued behind the wait for the sender's event
        sender.send_signal(signal.SIGKILL)
        sender.wait()
        try:
            torch.accinte.synchronize()
        except RuntimeError as e:
            assert "acErrorMapBufferObjectFailed" in str(e), e
        else:
            raise AssertionError("the wait for a dead sender's event succeeded")
        del copy, received
        assert torch.ones(4, device="accinte").sum().item() == 4
    """, timeout=120)
