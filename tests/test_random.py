"""Random numbers: per-device default generators, seeding, state round trips."""

import pytest
import torch


def test_manual_seed_reproduces():
    torch.accinte.manual_seed(123)
    a = torch.randn(100, device="accinte")
    torch.accinte.manual_seed(123)
    b = torch.randn(100, device="accinte")
    assert torch.equal(a.cpu(), b.cpu())
    assert torch.accinte.initial_seed() == 123


def test_torch_manual_seed_seeds_accinte():
    torch.manual_seed(7)
    a = torch.rand(10, device="accinte:1")
    torch.manual_seed(7)
    b = torch.rand(10, device="accinte:1")
    assert torch.equal(a.cpu(), b.cpu())


def test_accinte_generator_is_not_the_cpu_generator():
    torch.accinte.manual_seed(5)
    torch.manual_seed(99)  # seeds CPU and (via manual_seed_all) accinte
    torch.accinte.manual_seed_all(5)
    cpu_before = torch.get_rng_state()
    torch.randn(50, device="accinte")
    assert torch.equal(torch.get_rng_state(), cpu_before)  # CPU stream untouched


def test_devices_have_independent_generators():
    torch.accinte.manual_seed_all(11)
    a1 = torch.rand(5, device="accinte:1")
    torch.accinte.manual_seed_all(11)
    torch.rand(1000, device="accinte:0")  # drawing on device 0 ...
    a2 = torch.rand(5, device="accinte:1")  # ... does not move device 1's stream
    assert torch.equal(a1.cpu(), a2.cpu())


def test_state_round_trip():
    state = torch.accinte.get_rng_state()
    a = torch.rand(20, device="accinte")
    torch.accinte.set_rng_state(state)
    b = torch.rand(20, device="accinte")
    assert torch.equal(a.cpu(), b.cpu())
    states = torch.accinte.get_rng_state_all()
    assert len(states) == torch.accinte.device_count()
    c = [torch.rand(3, device=f"accinte:{i}").cpu() for i in range(2)]
    torch.accinte.set_rng_state_all(states)
    d = [torch.rand(3, device=f"accinte:{i}").cpu() for i in range(2)]
    assert all(torch.equal(x, y) for x, y in zip(c, d))


def test_explicit_generator():
    g = torch.Generator(device="accinte")
    assert g.device == torch.device("accinte:0")
    g.manual_seed(42)
    a = torch.randn(8, device="accinte", generator=g)
    g.manual_seed(42)
    b = torch.randn(8, device="accinte", generator=g)
    assert torch.equal(a.cpu(), b.cpu())
    g.manual_seed(43)
    assert not torch.equal(torch.randn(8, device="accinte", generator=g).cpu(), a.cpu())
    assert torch.Generator(device="accinte:1").device == torch.device("accinte:1")
    with pytest.raises(RuntimeError, match="Expected a generator on accinte"):
        torch.randn(3, device="accinte", generator=torch.Generator())


def test_state_is_seed_and_offset():
    torch.accinte.manual_seed(9)
    state = torch.accinte.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    assert state[:8].view(torch.int64).item() == 9 and state[8:].view(torch.int64).item() == 0
    torch.rand(3, device="accinte")
    assert torch.accinte.get_rng_state()[8:].view(torch.int64).item() == 1
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.accinte.set_rng_state(torch.zeros(5, dtype=torch.uint8))


def test_numbers_are_fixed_at_launch_not_when_the_kernel_runs():
    torch.accinte.manual_seed(1)
    expected_1 = torch.rand(4, device="accinte").cpu()
    torch.accinte.manual_seed(2)
    expected_2 = torch.rand(4, device="accinte").cpu()
    torch.accinte._sleep(200)  # the next kernels wait behind this
    torch.accinte.manual_seed(1)
    a = torch.rand(4, device="accinte")
    torch.accinte.manual_seed(2)  # re-seeds while `a` has not been drawn yet
    b = torch.rand(4, device="accinte")
    assert not torch.accinte.current_stream().query()
    assert torch.equal(a.cpu(), expected_1) and torch.equal(b.cpu(), expected_2)


def test_seed_and_seed_all_reseed_randomly():
    torch.accinte.manual_seed_all(1)
    torch.accinte.seed()
    assert torch.accinte.initial_seed() != 1
    torch.accinte.seed_all()
    s = torch.accinte.initial_seed()
    with torch.accinte.device(1):
        assert torch.accinte.initial_seed() == s  # one seed for every device
    a = torch.rand(4, device="accinte")
    torch.accinte.manual_seed(torch.accinte.initial_seed())
    b = torch.rand(4, device="accinte")
    assert torch.equal(a.cpu(), b.cpu())


@pytest.mark.parametrize("op", [
    lambda: torch.rand(6, device="accinte"),
    lambda: torch.randint(0, 100, (6,), device="accinte"),
    lambda: torch.randperm(6, device="accinte"),
    lambda: torch.empty(6, device="accinte").normal_(),
    lambda: torch.empty(6, device="accinte").bernoulli_(0.5),
    lambda: torch.nn.functional.dropout(torch.ones(6, device="accinte"), 0.5),
])
def test_random_ops_follow_the_device_seed(op):
    torch.accinte.manual_seed(2024)
    a = op()
    torch.accinte.manual_seed(2024)
    b = op()
    assert a.device.type == "accinte"
    assert torch.equal(a.cpu(), b.cpu())
