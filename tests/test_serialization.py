"""torch.save / torch.load of accinte tensors: devices, shared storage, every
map_location form, and backend-private tensor metadata (the format tag of
csrc/core/AccInteTensorMeta.h) carried through a checkpoint."""

import io

import pytest
import torch


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_kwargs)


def test_tensor_round_trip_keeps_device_dtype_and_values():
    x = torch.arange(12, dtype=torch.float64, device="accinte:1").view(3, 4)
    x.requires_grad_()
    y = round_trip(x)
    assert y.device == torch.device("accinte:1")
    assert y.dtype == torch.float64 and y.requires_grad
    assert torch.equal(y.detach().cpu(), x.detach().cpu())


def test_views_keep_their_shared_storage():
    base = torch.zeros(10, device="accinte")
    loaded = round_trip({"base": base, "view": base[2:6], "strided": base[::3]})
    b, v, s = loaded["base"], loaded["view"], loaded["strided"]
    assert v.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert v.storage_offset() == 2 and s.stride() == (3,)
    v.fill_(1.0)
    s.fill_(2.0)
    assert b.cpu().tolist() == [2, 0, 1, 2, 1, 1, 2, 0, 0, 2]


def test_module_state_dict_round_trip():
    model = torch.nn.Linear(4, 3).to("accinte")
    state = round_trip(model.state_dict())
    fresh = torch.nn.Linear(4, 3).to("accinte")
    fresh.load_state_dict(state)
    assert all(p.device.type == "accinte" for p in state.values())
    x = torch.randn(2, 4, device="accinte")
    assert torch.equal(fresh(x).cpu(), model(x).cpu())


def test_untyped_storage_round_trip():
    storage = torch.tensor([1, 2, 3], dtype=torch.uint8, device="accinte:1").untyped_storage()
    loaded = round_trip(storage)
    # torch.load returns every storage as a (deprecated) TypedStorage, on any device.
    loaded = loaded._untyped_storage
    assert loaded.device == torch.device("accinte:1")
    assert list(loaded.cpu()) == [1, 2, 3]


MAP_LOCATIONS = {
    "str cpu": ("cpu", "cpu"),
    "str accinte:0": ("accinte:0", "accinte:0"),
    "str accinte": ("accinte", "accinte:0"),
    "torch.device": (torch.device("accinte", 0), "accinte:0"),
    "torch.device cpu": (torch.device("cpu"), "cpu"),
    "dict": ({"accinte:1": "accinte:0"}, "accinte:0"),
    "dict to cpu": ({"accinte:1": "cpu"}, "cpu"),
    "dict not matching": ({"accinte:0": "cpu"}, "accinte:1"),
    "function keeping storage on cpu": (lambda storage, location: storage, "cpu"),
    "function moving": (lambda storage, location: storage.accinte(0), "accinte:0"),
    "function deferring": (lambda storage, location: None, "accinte:1"),
}


@pytest.mark.parametrize("name", MAP_LOCATIONS)
def test_map_location(name):
    map_location, expected = MAP_LOCATIONS[name]
    x = torch.arange(5.0, device="accinte:1")
    y = round_trip({"x": x, "view": x[1:]}, map_location=map_location)
    assert y["x"].device == torch.device(expected)
    assert y["x"].cpu().tolist() == [0, 1, 2, 3, 4]
    assert y["view"].untyped_storage().data_ptr() == y["x"].untyped_storage().data_ptr()


def test_cpu_checkpoint_loads_onto_accinte():
    y = round_trip(torch.ones(3), map_location="accinte:1")
    assert y.device == torch.device("accinte:1")


def test_missing_device_is_a_clear_error():
    x = torch.ones(2, device="accinte:1")
    with pytest.raises(RuntimeError, match="accinte device index 7"):
        round_trip(x, map_location="accinte:7")


# ---- backend-private metadata: the format tag --------------------------------


def test_format_tag_is_set_read_and_copied_with_the_tensorimpl():
    x = torch.ones(4, device="accinte")
    assert torch.accinte._get_backend_format(x) == 0
    torch.accinte._set_backend_format(x, 3)
    assert torch.accinte._get_backend_format(x) == 3
    detached = x.detach()  # shallow copy of the TensorImpl: metadata cloned
    assert torch.accinte._get_backend_format(detached) == 3
    torch.accinte._set_backend_format(detached, 4)  # ... as an independent copy
    assert torch.accinte._get_backend_format(x) == 3
    assert torch.accinte._get_backend_format(x[1:]) == 0  # views are new TensorImpls
    assert torch.accinte._get_backend_format(x + 1) == 0


def test_format_tag_errors():
    with pytest.raises(RuntimeError, match="expects an accinte tensor, but got a tensor on cpu"):
        torch.accinte._get_backend_format(torch.ones(2))
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.accinte._set_backend_format(torch.ones(2, device="accinte"), -1)
    with pytest.raises(TypeError, match="expects a torch.Tensor, got int"):
        torch.accinte._get_backend_format(3)


def test_format_tag_survives_save_and_load():
    x = torch.ones(4, device="accinte:1")
    plain = torch.zeros(2, device="accinte:1")
    torch.accinte._set_backend_format(x, 29)
    assert torch._utils.get_tensor_metadata(x) == {"accinte_format=29": True}
    assert torch._utils.get_tensor_metadata(plain) == {}  # default formats add nothing
    loaded = round_trip({"x": x, "plain": plain})
    assert torch.accinte._get_backend_format(loaded["x"]) == 29
    assert torch.accinte._get_backend_format(loaded["plain"]) == 0
    moved = round_trip(x, map_location="accinte:0")
    assert torch.accinte._get_backend_format(moved) == 29


def test_format_tag_is_dropped_when_loading_elsewhere():
    x = torch.ones(4, device="accinte")
    torch.accinte._set_backend_format(x, 5)
    assert round_trip(x, map_location="cpu").device.type == "cpu"


def test_corrupt_format_metadata_is_reported():
    x = torch.ones(2, device="accinte")
    with pytest.raises(RuntimeError, match="Corrupt accinte tensor metadata"):
        torch._utils.set_tensor_metadata(x, {"accinte_format=abc": True})
