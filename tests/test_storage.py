"""Storages on accinte: the custom StorageImpl (csrc/core/AccInteStorageImpl.h)
is what every path creates, and untyped storages resize, share and set_."""

import io
import pickle

import pytest
import torch

from torch_accinte import _C

is_ours = torch.accinte._is_accinte_storage_impl
serial = torch.accinte._storage_serial


@pytest.mark.parametrize("make", [
    pytest.param(lambda: torch.empty(3, device="accinte"), id="empty"),
    pytest.param(lambda: torch.empty_strided((2, 2), (1, 2), device="accinte"), id="empty_strided"),
    pytest.param(lambda: torch.zeros(0, device="accinte"), id="zero-size"),
    pytest.param(lambda: torch.ones(3).to("accinte:1"), id="to"),
    pytest.param(lambda: torch.ones(3, device="accinte") * 2, id="operator result"),
    pytest.param(lambda: torch.ones(3, device="accinte").clone(
        memory_format=torch.contiguous_format), id="clone"),
    pytest.param(lambda: torch.UntypedStorage(16, device="accinte"), id="UntypedStorage"),
    pytest.param(lambda: torch.ones(2).untyped_storage().accinte(), id="storage.accinte()"),
    pytest.param(lambda: torch.load(_saved(torch.ones(2, device="accinte"))), id="torch.load"),
])
def test_every_accinte_storage_is_an_accinte_storage_impl(make):
    assert is_ours(make())


def _saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def test_empty_tensors_keep_their_shape_and_format():
    # The kernels build tensors over AccInteStorageImpl themselves: check the
    # metadata empty_generic would have given.
    x = torch.empty(2, 3, 4, 5, device="accinte", memory_format=torch.channels_last)
    assert x.shape == (2, 3, 4, 5) and x.is_contiguous(memory_format=torch.channels_last)
    assert x.untyped_storage().nbytes() == 2 * 3 * 4 * 5 * 4
    y = torch.empty_strided((2, 3), (1, 2), dtype=torch.float16, device="accinte")
    assert y.stride() == (1, 2) and y.untyped_storage().nbytes() == 6 * 2
    with pytest.raises(RuntimeError, match="negative dimension"):
        torch.empty(-1, device="accinte")


def test_cpu_storages_are_not_ours():
    assert not is_ours(torch.ones(2))
    with pytest.raises(RuntimeError, match="expects an accinte storage"):
        serial(torch.ones(2))
    with pytest.raises(TypeError, match="torch.Tensor or torch.UntypedStorage"):
        serial("storage")


def test_serial_follows_the_storage_not_the_tensor():
    x = torch.zeros(8, device="accinte")
    assert serial(x[2:]) == serial(x) == serial(x.untyped_storage())
    assert serial(x.view(2, 4)) == serial(x)
    assert serial(x.clone()) != serial(x)
    alias = torch.empty(0, device="accinte").set_(x.untyped_storage())
    assert serial(alias) == serial(x)
    before = serial(x)
    x.untyped_storage().resize_(64)  # new memory, same storage
    assert serial(x) == before
    assert serial(torch.zeros(1, device="accinte")) > before  # increasing


# ---- untyped storages -----------------------------------------------------------


def test_untyped_storage_basics():
    s = torch.UntypedStorage(6, device="accinte:1")
    assert s.device == torch.device("accinte:1") and s.nbytes() == 6 and s.is_accinte
    s.copy_(torch.UntypedStorage.from_buffer(b"abcdef", dtype=torch.uint8))
    assert bytes(s.cpu()) == b"abcdef"
    assert s.accinte(0).device == torch.device("accinte:0")
    assert bytes(s.accinte(0).cpu()) == b"abcdef"


def test_untyped_storage_resize_keeps_the_prefix():
    x = torch.arange(4, dtype=torch.int32, device="accinte")
    storage = x.untyped_storage()
    storage.resize_(32)
    assert storage.nbytes() == 32
    assert x.cpu().tolist() == [0, 1, 2, 3]  # the tensor sees the moved data
    storage.resize_(8)
    assert storage.nbytes() == 8
    assert torch.empty(0, dtype=torch.int32, device="accinte").set_(storage).cpu().tolist() \
        == [0, 1]
    storage.resize_(0)
    assert storage.nbytes() == 0


def test_tensors_share_a_storage_through_set_():
    x = torch.zeros(6, device="accinte")
    y = torch.empty(0, device="accinte").set_(x.untyped_storage(), 2, (2, 2), (2, 1))
    assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    y.fill_(5.0)
    assert x.cpu().tolist() == [0, 0, 5, 5, 5, 5]
    z = torch.empty(0, device="accinte").set_(y)
    z.zero_()
    assert x.cpu().sum().item() == 0


def test_set_to_another_tensor_shares_its_storage():
    x = torch.arange(6.0, device="accinte").view(2, 3)
    y = torch.zeros(4, device="accinte")
    y.set_(x)
    assert y.is_set_to(x) and x.is_set_to(y)
    assert not y.is_set_to(x.clone()) and not y.is_set_to(x.t()) and not y.is_set_to(x[1:])
    x.add_(1)
    assert y.cpu().tolist() == [[1, 2, 3], [4, 5, 6]]


def test_set_grows_a_too_small_storage():
    small = torch.UntypedStorage(4, device="accinte")
    t = torch.empty(0, device="accinte").set_(small, 0, (1,), (1,))
    t.resize_(4)  # needs 16 bytes: the storage grows
    assert small.nbytes() == 16


def test_storage_of_a_non_accinte_device_is_refused_by_set_():
    with pytest.raises(RuntimeError, match="device"):
        torch.empty(0, device="accinte").set_(torch.ones(2).untyped_storage())


def test_typed_storage_view():
    x = torch.ones(3, device="accinte")
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        typed = x.storage()
    assert typed.device == x.device and typed.is_accinte and typed.dtype == torch.float32
    assert _C._is_accinte_storage_impl(x)


LEGACY_STORAGES = {
    torch.float64: "DoubleStorage", torch.float32: "FloatStorage", torch.float16: "HalfStorage",
    torch.int64: "LongStorage", torch.int32: "IntStorage", torch.int16: "ShortStorage",
    torch.int8: "CharStorage", torch.uint8: "ByteStorage", torch.bool: "BoolStorage",
    torch.bfloat16: "BFloat16Storage", torch.complex128: "ComplexDoubleStorage",
    torch.complex64: "ComplexFloatStorage",
}


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
@pytest.mark.parametrize("dtype", LEGACY_STORAGES, ids=str)
def test_storage_type_is_the_legacy_typed_storage_class(dtype):
    name = LEGACY_STORAGES[dtype]
    cls = getattr(torch.accinte, name)
    x = torch.zeros(3, dtype=dtype, device="accinte")
    assert x.storage_type() is cls and x.storage().type() == f"torch.accinte.{name}"
    assert isinstance(x.storage(), cls) and not isinstance(x.cpu().storage(), cls)
    assert not isinstance(x.storage(), getattr(torch, name))  # the CPU's class
    assert cls.dtype == dtype and cls in torch._storage_classes


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_legacy_storage_classes_make_accinte_storages():
    s = torch.accinte.FloatStorage([1.0, 2.5])
    assert s.device.type == "accinte" and s.dtype == torch.float32 and s.tolist() == [1.0, 2.5]
    assert len(torch.accinte.LongStorage(4)) == 4
    assert pickle.loads(pickle.dumps(torch.accinte.FloatStorage)) is torch.accinte.FloatStorage
    with pytest.raises(RuntimeError, match="from_buffer: Not available for accinte storage"):
        torch.accinte.FloatStorage.from_buffer(b"abcd")
