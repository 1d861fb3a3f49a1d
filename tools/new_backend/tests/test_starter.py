"""What a new device must do before anything else, each against the CPU.

These are the starter backend's own tests (tools/new_backend.py writes them,
renamed, into every starter): tensors created, printed and copied; views;
.item(); a backward pass; two devices; the device's generator; streams and
events. Every result is compared with the CPU's, bit for bit: the stand-in
kernels are the CPU's, so a difference is a bug of the backend.
"""

import pytest
import torch
import torch.nn.functional as F

import torch_accinte  # noqa: F401  (registers the device; autoload does it too)

DEVICE = "accinte"


def test_torch_accelerator_names_the_device():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator().type == DEVICE
    assert torch.accelerator.device_count() >= 2
    assert torch.device(DEVICE).type == DEVICE


def test_a_tensor_is_created_printed_and_copied_both_ways():
    x = torch.arange(6.0, device=DEVICE)
    assert x.device == torch.device(DEVICE, 0)
    assert f"device='{DEVICE}:0'" in repr(x)
    assert torch.equal(x.cpu(), torch.arange(6.0))
    host = torch.randn(4, 5)
    assert torch.equal(host.to(DEVICE).cpu(), host)
    assert torch.equal(torch.ones(2, device=DEVICE).add(1).cpu(), torch.full((2,), 2.0))


def test_views_share_the_device_memory():
    base = torch.arange(12.0).reshape(3, 4)
    x = base.to(DEVICE)
    view = x.t()[1:3]
    assert view.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    view.mul_(10)
    expected = base.clone()
    expected.t()[1:3].mul_(10)
    assert torch.equal(x.cpu(), expected)
    assert torch.equal(x.view(-1)[::5].cpu(), expected.view(-1)[::5])


def test_item_reads_a_value_back():
    x = torch.tensor([1.5, 2.5], device=DEVICE)
    assert x.sum().item() == 4.0
    assert (x > 2).any().item() is True


def test_a_training_step_gives_the_cpus_gradients():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    data, target = torch.randn(32, 8), torch.randn(32, 1)
    on_device = [p.detach().to(DEVICE).requires_grad_() for p in model.parameters()]

    def loss(params, x, y):
        hidden = F.relu(F.linear(x, params[0], params[1]))
        return F.mse_loss(F.linear(hidden, params[2], params[3]), y)

    loss(list(model.parameters()), data, target).backward()
    loss(on_device, data.to(DEVICE), target.to(DEVICE)).backward()
    for cpu, dev in zip(model.parameters(), on_device):
        assert torch.equal(dev.grad.cpu(), cpu.grad)


def test_two_devices():
    x = torch.arange(4.0, device=f"{DEVICE}:1")
    assert x.device.index == 1
    y = x.to(f"{DEVICE}:0")
    assert y.device.index == 0 and torch.equal(y.cpu(), torch.arange(4.0))
    with torch.accelerator.device_index(1):
        assert torch.accelerator.current_device_index() == 1
        assert torch.ones(1, device=DEVICE).device.index == 1
    assert torch.accelerator.current_device_index() == 0


def test_the_device_generator_follows_the_seed():
    torch.manual_seed(7)
    first = torch.rand(1000, device=DEVICE).cpu()
    torch.manual_seed(7)
    assert torch.equal(torch.rand(1000, device=DEVICE).cpu(), first)
    generator = torch.Generator(device=DEVICE).manual_seed(7)
    assert torch.equal(torch.rand(1000, device=DEVICE, generator=generator).cpu(), first)
    torch.manual_seed(7)
    dropped = F.dropout(torch.ones(1000, device=DEVICE), 0.5).cpu()
    torch.manual_seed(7)
    assert torch.equal(F.dropout(torch.ones(1000, device=DEVICE), 0.5).cpu(), dropped)
    with pytest.raises(RuntimeError):
        torch.rand(3, device=DEVICE, generator=torch.Generator().manual_seed(0))


def test_streams_and_events_order_work():
    side = torch.Stream(device=DEVICE)
    x = torch.randn(256, 256)
    a = x.to(DEVICE)
    done = torch.Event(device=DEVICE)
    with side:
        b = a @ a
        done.record()
    torch.accelerator.current_stream().wait_event(done)
    c = b + 1
    torch.accelerator.synchronize()
    assert done.query() and side.query()
    assert torch.equal(c.cpu(), x @ x + 1)
