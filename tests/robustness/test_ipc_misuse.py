"""IPC misuse: a message consumed twice cannot take the share's count below
zero (which made empty_cache and every later share fail)."""


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
