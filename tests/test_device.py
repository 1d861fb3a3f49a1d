"""Device management: torch.accinte and torch.accelerator on accinte."""

import ctypes
from pathlib import Path

import pytest
import torch

import torch_accinte


def test_torch_accinte_is_the_device_module():
    assert torch.accinte is torch_accinte.accinte
    assert torch._C._get_privateuse1_backend_name() == "accinte"
    assert torch.accinte.is_available()


def test_device_count_agrees_across_layers():
    # One source of truth: the runtime's count, seen from every layer.
    lib = ctypes.CDLL(str(Path(torch_accinte.__file__).parent / "lib" / "libaccinte.so"))
    count = ctypes.c_int(-1)
    assert lib.acGetDeviceCount(ctypes.byref(count)) == 0
    assert count.value == torch.accinte.device_count() == torch.accelerator.device_count() == 2


def test_device_count_from_environment(run_python):
    out = run_python(
        "import torch; print(torch.accinte.device_count(), torch.accelerator.device_count())",
        env={"ACCINTE_DEVICE_COUNT": "3"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "3"]


def test_current_device_and_set_device():
    assert torch.accinte.current_device() == 0
    try:
        torch.accinte.set_device(1)
        assert torch.accinte.current_device() == 1
        assert torch.accelerator.current_device_index() == 1
        assert torch.empty(1, device="accinte").device == torch.device("accinte:1")
    finally:
        torch.accinte.set_device(0)
    assert torch.empty(1, device="accinte").device == torch.device("accinte:0")


def test_current_device_is_per_thread():
    import threading

    seen = []
    torch.accinte.set_device(1)
    try:
        t = threading.Thread(target=lambda: seen.append(torch.accinte.current_device()))
        t.start()
        t.join()
    finally:
        torch.accinte.set_device(0)
    assert seen == [0]


def test_device_context_manager_restores():
    with torch.accinte.device(1):
        assert torch.accinte.current_device() == 1
        with torch.accinte.device("accinte:0"):
            assert torch.accinte.current_device() == 0
        assert torch.accinte.current_device() == 1
    assert torch.accinte.current_device() == 0
    with torch.accelerator.device_index(1):
        assert torch.accinte.current_device() == 1
    assert torch.accinte.current_device() == 0


def test_device_of():
    t = torch.ones(1, device="accinte:1")
    with torch.accinte.device_of(t):
        assert torch.accinte.current_device() == 1
    with torch.accinte.device_of(torch.ones(1)):
        assert torch.accinte.current_device() == 0


@pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions")
def test_device_properties_and_capability():
    props = torch.accinte.get_device_properties(0)
    assert props.name == torch.accinte.get_device_name(0) == "AccInte Emulated Device"
    assert props.total_memory == torch.accinte.mem_get_info(0)[1] > 0
    assert torch.accinte.get_device_capability(1) == (props.major, props.minor)
    dtypes = torch.accelerator.get_device_capability("accinte:0")["supported_dtypes"]
    assert torch.float32 in dtypes and torch.bfloat16 in dtypes
    # Quantized tensors live on accinte too (tests/test_quantized.py).
    for quantized in (torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4):
        assert quantized in dtypes
        x = torch.rand(8)
        q = torch.quantize_per_tensor(x.to("accinte:0"), 0.1, 0, quantized)
        assert torch.equal(q.int_repr().cpu(), torch.quantize_per_tensor(x, 0.1, 0, quantized).int_repr())


def test_device_memory_from_environment(run_python):
    out = run_python(
        "import torch; print(torch.accinte.get_device_properties(0).total_memory)",
        env={"ACCINTE_DEVICE_MEMORY": "256M"},
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == 256 * 1024 * 1024


def test_initialisation_is_lazy(run_python):
    out = run_python(
        """
        import torch
        print(torch.accinte.is_initialized(), torch.accinte._initialized)
        torch.ones(1, device="accinte")
        print(torch.accinte.is_initialized(), torch.accinte._initialized)
        """
    )
    assert out.returncode == 0, out.stderr
    # _initialized: the flag torch.utils.checkpoint reads to decide whether to
    # save the device's RNG state (getattr(device_module, "_initialized", False)).
    assert out.stdout.split() == ["False", "False", "True", "True"]


def test_accelerator_api():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("accinte")
    x = torch.ones(4, device="accinte")
    torch.accelerator.synchronize()
    torch.accinte.synchronize()
    torch.accinte.synchronize(1)
    assert x.sum().item() == 4


def test_generated_methods():
    t = torch.ones(2)
    assert not t.is_accinte
    d = t.accinte()
    assert d.is_accinte and d.device == torch.device("accinte:0")
    assert t.accinte(1).device == torch.device("accinte:1")
    m = torch.nn.Linear(2, 2).accinte()
    assert m.weight.is_accinte
    s = torch.ones(3).untyped_storage().accinte()
    assert s.is_accinte and s.device.type == "accinte"
    seq = torch.nn.utils.rnn.pack_sequence([torch.ones(3), torch.ones(2)])
    assert seq.accinte().is_accinte


@pytest.mark.parametrize("bad", [2, 7, "accinte:5", torch.device("accinte", 9)])
def test_bad_device_index_is_a_clear_error(bad):
    with pytest.raises(RuntimeError, match="Invalid accinte device index"):
        torch.accinte.set_device(bad)
    with pytest.raises(RuntimeError, match="Invalid accinte device index"):
        torch.accinte.get_device_properties(bad)
    # and the device keeps working
    assert torch.ones(1, device="accinte").item() == 1


def test_bad_device_index_in_tensor_creation():
    with pytest.raises(RuntimeError, match="Invalid accinte device index 4"):
        torch.empty(3, device="accinte:4")
    with pytest.raises(RuntimeError, match="Invalid accinte device index"):
        torch.ones(3).to("accinte:2")
    assert torch.ones(2, device="accinte:1").sum().item() == 2


def test_wrong_device_type_is_refused():
    with pytest.raises(ValueError, match="Expected an accinte device"):
        torch.accinte.set_device("cpu")
