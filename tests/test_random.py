"""Random numbers: per-device default generators, seeding, state round trips,
fork_rng, and exact reproduction of dropout and activation checkpointing."""

import pytest
import torch
import torch.utils.checkpoint

from held_stream import hold_stream


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
    with pytest.raises(RuntimeError, match="Expected a 'accinte' device type for generator but found 'cpu'"):
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
    with hold_stream() as hold:  # the next kernels wait behind the held one
        torch.accinte.manual_seed(1)
        a = torch.rand(4, device="accinte")
        torch.accinte.manual_seed(2)  # re-seeds while `a` has not been drawn yet
        b = torch.rand(4, device="accinte")
        assert hold.held()
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


def test_generator_state_round_trip():
    g = torch.Generator("accinte:1").manual_seed(9)
    state = g.get_state()
    a = torch.rand(16, device="accinte:1", generator=g)
    g.set_state(state)
    b = torch.rand(16, device="accinte:1", generator=g)
    assert torch.equal(a.cpu(), b.cpu())
    with pytest.raises(RuntimeError, match="16 bytes"):
        g.set_state(torch.zeros(3, dtype=torch.uint8))


@pytest.mark.parametrize("copy_generator", [
    pytest.param(lambda g: __import__("copy").deepcopy(g), id="deepcopy"),
    pytest.param(lambda g: __import__("pickle").loads(__import__("pickle").dumps(g)), id="pickle"),
    pytest.param(lambda g: g.clone_state(), id="clone_state"),
])
def test_generator_copies_carry_the_state(copy_generator):
    g = torch.Generator("accinte:1").manual_seed(77)
    torch.rand(5, device="accinte:1", generator=g)  # move away from the seed's start
    h = copy_generator(g)
    assert h.device == torch.device("accinte:1")
    assert h.initial_seed() == 77
    a = torch.rand(8, device="accinte:1", generator=g)
    b = torch.rand(8, device="accinte:1", generator=h)
    assert torch.equal(a.cpu(), b.cpu())


def test_generator_offset_counts_random_kernels():
    # See Note [accinte random numbers]: each random kernel takes one offset.
    g = torch.Generator("accinte").manual_seed(5)
    assert g.get_offset() == 0
    torch.rand(3, device="accinte", generator=g)
    second = torch.rand(3, device="accinte", generator=g)
    assert g.get_offset() == 2
    g.manual_seed(5)
    g.set_offset(1)
    assert torch.equal(torch.rand(3, device="accinte", generator=g).cpu(), second.cpu())


def test_fork_rng_restores_every_device():
    torch.manual_seed(3)
    with torch.random.fork_rng(devices=[0, 1], device_type="accinte"):
        torch.accinte.manual_seed_all(1234)  # even reseeding inside is undone
        inside = [torch.rand(4, device=f"accinte:{i}").cpu() for i in range(2)]
    after = [torch.rand(4, device=f"accinte:{i}").cpu() for i in range(2)]
    torch.manual_seed(3)
    expected = [torch.rand(4, device=f"accinte:{i}").cpu() for i in range(2)]
    assert all(torch.equal(a, e) for a, e in zip(after, expected))
    assert not any(torch.equal(a, i) for a, i in zip(after, inside))


def test_fork_rng_default_devices():
    # Without `devices`, fork_rng snapshots every accinte device (and warns about it).
    torch.manual_seed(8)
    with pytest.warns(UserWarning, match="ACCINTE"):
        with torch.random.fork_rng(device_type="accinte"):
            torch.rand(10, device="accinte:1")
    a = torch.rand(4, device="accinte:1").cpu()
    torch.manual_seed(8)
    assert torch.equal(a, torch.rand(4, device="accinte:1").cpu())


def test_dropout_module_reproduces_under_the_same_seed():
    layer = torch.nn.Dropout(0.4).train()
    x = torch.ones(64, 64, device="accinte")
    torch.manual_seed(21)
    a = layer(x)
    torch.manual_seed(21)
    b = layer(x)
    c = layer(x)  # the stream moved on: another mask
    assert torch.equal(a.cpu(), b.cpu())
    assert not torch.equal(a.cpu(), c.cpu())
    assert 0.3 < (a == 0).float().mean().item() < 0.5


def _gradients(checkpointed: bool, preserve_rng_state: bool = True, use_reentrant: bool = False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(32, 4)
    ).to("accinte")
    x = torch.randn(8, 16, device="accinte", requires_grad=True)
    torch.manual_seed(1)  # the dropout mask comes from this seed
    if checkpointed:
        out = torch.utils.checkpoint.checkpoint(
            model, x, use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state
        )
    else:
        out = model(x)
    out.square().sum().backward()
    return [p.grad.cpu() for p in model.parameters()] + [x.grad.cpu()]


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_through_dropout_reproduces_gradients(use_reentrant):
    # The recomputed forward must draw the same dropout mask as the original one.
    expected = _gradients(checkpointed=False)
    got = _gradients(checkpointed=True, use_reentrant=use_reentrant)
    assert all(torch.equal(e, g) for e, g in zip(expected, got))


def test_checkpoint_without_preserved_rng_draws_another_mask():
    # The control for the test above: that test would pass vacuously if the
    # recomputation did not depend on the device's RNG state.
    expected = _gradients(checkpointed=False)
    got = _gradients(checkpointed=True, preserve_rng_state=False)
    assert not all(torch.equal(e, g) for e, g in zip(expected, got))


def test_seeding_is_lazy_and_a_child_forked_after_it_uses_the_device(run_python):
    # torch.cuda's behaviour: seeds wait for the device's first use, so a
    # process that only seeded can still fork children that use accinte, and
    # each child draws the numbers that seed gives.
    out = run_python(
        """
        import os, torch
        torch.manual_seed(0)
        print("initialised after seeding:", torch.accinte.is_initialized())
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(write_end, repr(torch.rand(4, device="accinte").cpu().tolist()).encode())
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as child:
            child_drawn = eval(child.read())
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        parent_drawn = torch.rand(4, device="accinte").cpu().tolist()
        torch.manual_seed(0)  # now eager: the device is initialised
        reseeded = torch.rand(4, device="accinte").cpu().tolist()
        print("child draws the parent's numbers:", child_drawn == parent_drawn)
        print("child draws seed 0's numbers:", child_drawn == reseeded)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "initialised after seeding: False",
        "child draws the parent's numbers: True",
        "child draws seed 0's numbers: True",
    ]


def test_rng_state_calls_wait_for_initialisation(run_python):
    out = run_python(
        """
        import torch
        state = torch.tensor([5] + [0] * 15, dtype=torch.uint8)  # seed 5, offset 0
        torch.accinte.set_rng_state(state, 1)
        torch.accinte.seed()
        print("initialised:", torch.accinte.is_initialized())
        print("state applied:", torch.accinte.get_rng_state(1).tolist() == state.tolist())
        torch.accinte.set_rng_state(torch.zeros(3, dtype=torch.uint8))
        """
    )
    assert out.stdout.splitlines() == ["initialised: False", "state applied: True"], out.stderr
    # A call made before initialisation fails when it runs, naming where it was made.
    assert "RuntimeError" in out.stderr and "16" in out.stderr, out.stderr
