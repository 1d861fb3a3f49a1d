// libtorch_bindings.so: the Python glue. Builds the torch_accinte._C module
// (its PyInit is the C stub in stub.c) and exposes the few runtime facts that
// PyTorch's generic Python APIs (torch.accelerator, torch.Stream, ...) do not
// already reach. Functions are named after the torch.cuda internals they
// mirror (`_cuda_getDeviceCount` -> `_get_device_count`).
#include <Python.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <ATen/Context.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/Storage.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/device_lazy_init.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <csrc/core/AccInteStorageImpl.h>
#include <csrc/core/AccInteTensorMeta.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGenerator.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

#include "Bindings.h"

namespace py = pybind11;

namespace {

// Releases the GIL around runtime calls that may block.
using no_gil = py::call_guard<py::gil_scoped_release>;

// LITERALINCLUDE START: DEVICE INIT BINDING
// PyTorch keeps each device type's bad-fork state
// (torch/csrc/utils/device_lazy_init.h), as it does for CUDA. Registered
// before the device is first initialised, its fork handler marks a child
// forked from then on as in a bad fork and makes torch call
// torch.accinte._lazy_init() again at the child's next device use, which
// raises torch.cuda's "use the 'spawn' start method" error instead of whatever
// the runtime says first.
void lazy_init() {
  torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
  at::globalContext().lazyInitDevice(c10::DeviceType::PrivateUse1);
}

bool is_in_bad_fork() {
  return torch::utils::is_device_in_bad_fork(at::kPrivateUse1);
}
// LITERALINCLUDE END: DEVICE INIT BINDING

// Keeps the current stream busy for `ms` milliseconds: the way tests prove that
// work is asynchronous (torch.cuda._sleep's counterpart).
void sleep_on_current_stream(int64_t ms) {
  c10::accinte::launch_kernel(c10::accinte::getCurrentAccInteStream(), [ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }, "accinte::_sleep");
}

py::dict device_properties(c10::DeviceIndex device) {
  const acDeviceProp prop = c10::accinte::get_device_properties(device);
  py::dict d;
  d["name"] = std::string(prop.name);
  d["total_memory"] = prop.totalGlobalMem;
  d["major"] = prop.major;
  d["minor"] = prop.minor;
  d["multi_processor_count"] = prop.multiProcessorCount;
  return d;
}

// LITERALINCLUDE START: STREAM GIL HOOKS
// The GIL hooks of Note [accinte host waits and the GIL]: a host wait for the
// device releases the GIL when its thread holds it. Not while the interpreter
// finalizes, when a thread other than the finalizing one could not take the
// GIL back.
bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

void* release_gil_for_wait() {
  if (!Py_IsInitialized() || interpreter_finalizing() || PyGILState_Check() == 0) {
    return nullptr;
  }
  return PyEval_SaveThread();
}

void restore_gil_after_wait(void* thread_state) {
  PyEval_RestoreThread(static_cast<PyThreadState*>(thread_state));
}
// LITERALINCLUDE END: STREAM GIL HOOKS

// Process-wide glue set up once, when the module is built: the GIL hooks of
// host waits and the translation of c10 errors.
void install_python_hooks() {
  c10::accinte::set_host_wait_hooks({&release_gil_for_wait, &restore_gil_after_wait});
  // c10 errors become the Python exceptions torch's own bindings raise
  // (c10::OutOfMemoryError -> torch.OutOfMemoryError, c10::ValueError ->
  // ValueError, ...), through torch's own translation.
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) {
        std::rethrow_exception(p);
      }
    } catch (const c10::Error&) {
      torch::translate_exception_to_python(std::current_exception());
    }
  });
}

// For torch.accinte (accinte/__init__.py): initialisation, fork state, devices.
void add_device_functions(py::module_& m) {
  m.def("_init", &lazy_init, no_gil(),
        "Lazily initialises the backend (PrivateUse1 hooks' init); from then on a forked "
        "child is in a bad fork.");
  m.def("_is_in_bad_fork", &is_in_bad_fork,
        "True in a child forked after _init (torch::utils::is_device_in_bad_fork).");
  m.def("_get_device_count", &c10::accinte::device_count,
        "Number of devices (acGetDeviceCount); 0 if the runtime is unusable.");
  m.def("_get_device_properties", &device_properties, py::arg("device"),
        "acGetDeviceProperties as a dict.");
  m.def("_has_primary_context", &c10::accinte::has_primary_context, py::arg("device"),
        "True once the device has been used in this process.");
  m.def("_is_strict", [] { return acIsStrict() != 0; },
        "True when ACCINTE_STRICT=1 makes device memory unreadable to the host.");
  m.def("_sleep", &sleep_on_current_stream, py::arg("ms"),
        "Queues a kernel that sleeps `ms` milliseconds on the current stream.");
}

} // namespace

/// Builds the torch_accinte._C module (called by PyInit__C in stub.c). Named
/// after the package so that no other library's exported symbol (libtorch_python
/// exports `initModule`) can shadow it when Python loads extensions with
/// RTLD_GLOBAL.
extern "C" C10_EXPORT PyObject* torch_accinte_init_module() {
  static PyModuleDef definition = {
      PyModuleDef_HEAD_INIT, "torch_accinte._C", "accinte backend internals", -1, nullptr,
      nullptr, nullptr, nullptr, nullptr};
  PyObject* module = PyModule_Create(&definition);
  if (module == nullptr) {
    return nullptr;
  }
  try {
    auto m = py::reinterpret_borrow<py::module_>(module);
    install_python_hooks();
    add_device_functions(m);
    torch_accinte::add_registered_functions(m); // Bindings.h
  } catch (py::error_already_set& e) {
    e.restore();
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
