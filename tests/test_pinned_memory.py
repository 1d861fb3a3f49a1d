"""Pinned host memory (csrc/runtime/AccInteHostAllocator): pin_memory and
is_pinned, asynchronous non_blocking copies, the pinned cache's reuse rules
and statistics, empty_host_cache, and DataLoader(pin_memory=True)."""

import torch
from torch.utils.data import DataLoader, TensorDataset

from held_stream import hold_stream

N = 1 << 20  # floats per tensor: 4 MiB


def test_pin_memory_and_is_pinned():
    plain = torch.randn(100)
    assert not plain.is_pinned()
    pinned = plain.pin_memory()
    assert pinned.is_pinned()
    assert torch.equal(pinned, plain)
    assert torch.empty(10, pin_memory=True).is_pinned()
    # Views and slices of pinned memory are pinned too.
    assert pinned[10:20].is_pinned()


def test_non_blocking_device_to_pinned_copy_is_asynchronous():
    src = torch.arange(N, dtype=torch.float32, device="accinte")
    dst = torch.zeros(N).pin_memory()
    stream = torch.accinte.current_stream()
    stream.synchronize()
    with hold_stream() as hold:
        dst.copy_(src, non_blocking=True)
        assert hold.held()  # returned without waiting
        assert dst[-1].item() == 0  # the bytes have not landed yet
    stream.synchronize()
    assert torch.equal(dst, torch.arange(N, dtype=torch.float32))


def test_non_blocking_to_cpu_gives_pinned_memory_filled_later():
    src = torch.arange(N, dtype=torch.float32, device="accinte")
    stream = torch.accinte.current_stream()
    with hold_stream() as hold:
        out = src.to("cpu", non_blocking=True)
        assert out.is_pinned()  # torch pins the destination for a PrivateUse1 source
        assert hold.held()
    stream.synchronize()
    assert torch.equal(out, torch.arange(N, dtype=torch.float32))


def test_non_blocking_pinned_to_device_copy_is_asynchronous():
    src = torch.arange(N, dtype=torch.float32).pin_memory()
    with hold_stream() as hold:
        dst = src.to("accinte", non_blocking=True)
        assert hold.held()
    assert torch.equal(dst.cpu(), src)  # .cpu() queues behind the copy


def test_blocking_copy_from_pinned_memory_waits():
    src = torch.arange(N, dtype=torch.float32, device="accinte")
    dst = torch.zeros(N).pin_memory()
    torch.accinte._sleep(200)
    dst.copy_(src)  # non_blocking=False
    assert torch.accinte.current_stream().query()
    assert dst[-1].item() == N - 1


def test_pinned_block_is_not_reused_while_a_stream_copies_from_it():
    src = torch.ones(N).pin_memory()
    ptr = src.data_ptr()
    with hold_stream():
        dst = src.to("accinte", non_blocking=True)
        del src
        other = torch.empty(N, pin_memory=True)
        assert other.data_ptr() != ptr  # the stream has not read it yet
    torch.accinte.synchronize()
    again = torch.empty(N, pin_memory=True)
    assert again.data_ptr() == ptr  # reusable once the stream is done
    assert dst.sum().item() == N


def test_host_memory_stats_and_empty_host_cache():
    torch.accinte.synchronize()
    torch.accelerator.empty_host_cache()
    torch.accinte.reset_accumulated_host_memory_stats()
    stats = torch.accinte.host_memory_stats()
    for key in ["allocations.current", "allocated_bytes.peak", "active_requests.current",
                "active_bytes.allocated", "num_host_alloc", "num_host_free",
                "host_alloc_time.count", "host_free_time.avg"]:
        assert key in stats, key
    assert stats["allocations.current"] == 0

    pinned = torch.empty(N, pin_memory=True)  # 4 MiB
    stats = torch.accinte.host_memory_stats()
    assert stats["allocations.current"] == 1
    assert stats["active_requests.current"] == 1
    assert stats["allocated_bytes.current"] >= 4 * N
    assert stats["num_host_alloc"] == 1

    del pinned  # back into the cache, still allocated from the runtime
    assert torch.accinte.host_memory_stats()["allocations.current"] == 1
    torch.accelerator.empty_host_cache()  # acFreeHost on every cached block
    stats = torch.accinte.host_memory_stats()
    assert stats["allocations.current"] == 0
    assert stats["active_requests.current"] == 0
    assert stats["num_host_free"] == 1


def _train_from(loader: DataLoader) -> tuple[float, float]:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1).to("accinte")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for epoch in range(3):
        for x, y in loader:
            assert x.is_pinned() and y.is_pinned()
            x = x.to("accinte", non_blocking=True)
            y = y.to("accinte", non_blocking=True)
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses[0], losses[-1]


def _dataset() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    return TensorDataset(x, y)


def test_dataloader_pins_batches_for_accinte():
    assert torch.accelerator.current_accelerator().type == "accinte"
    first, last = _train_from(DataLoader(_dataset(), batch_size=16, pin_memory=True))
    assert last < first / 10


def test_dataloader_pin_memory_thread_with_a_worker():
    # With workers, batches are pinned by DataLoader's pin-memory thread.
    loader = DataLoader(_dataset(), batch_size=16, pin_memory=True, num_workers=1)
    first, last = _train_from(loader)
    assert last < first / 10
