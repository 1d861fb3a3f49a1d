// Python glue for torch.compile (Inductor.cpp): the raw stream handle that
// Inductor's generated wrapper passes to its kernels, and the launch of a
// compiled C++ kernel as a kernel on that stream.
/// Adds _get_current_raw_stream and _launch_compiled_kernel to the _C module.
#include "Bindings.h"

#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

// A compiled kernel is host code: launched as every CPU-computed kernel is.
#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

namespace py = pybind11;

namespace torch_accinte {
namespace {

// A kernel's name must outlive every run of the kernel (graph replays and the
// profiler's records keep the pointer), and the caller's string does not:
// compiled kernels are few, so their names are kept for the process's life.
const char* lasting_name(const std::string& name) {
  static std::mutex mutex;
  static std::unordered_set<std::string> names; // nodes never move
  std::lock_guard<std::mutex> lock(mutex);
  return names.insert(name).first->c_str();
}

// LITERALINCLUDE START: COMPILER LAUNCH BINDING
// Note [compiled kernels on accinte streams]
// Inductor's C++ code generator writes each kernel as `extern "C" void
// kernel(const float* in_ptr0, float* out_ptr0, int64_t ks0, ...)`. Our
// scheduling (torch_accinte/_inductor/codegen.py) appends an entry point with
// one fixed signature, KernelEntry, that unpacks the arguments from an array
// of 64-bit words and reports an exception as a message instead of letting it
// cross the C boundary. The generated Python wrapper calls
// _launch_compiled_kernel with the entry's address, the kernel's name, the raw
// stream handle and the arguments: tensors become their data pointers, ints
// and floats their 64-bit patterns, all copied into the closure queued with
// launch_cpu_kernel, the launch path of every CPU-computed kernel: the
// generated code is host code, so it runs in the one kernel scope (Note
// [accinte one kernel scope]) with the launching thread's thread count and
// denormal flags. So a compiled kernel runs on the stream's worker (or a
// waiting host) in stream order, is recorded by graph capture,
// waits under ACCINTE_LAUNCH_BLOCKING, and reports its error (an integer
// division by zero, say) at the next synchronisation. The host never touches
// device memory, so strict mode holds.
using KernelEntry = int (*)(const int64_t* args, char* error, size_t error_size);

// One kernel argument as a 64-bit word.
int64_t pack_argument(const py::handle& arg, const std::string& kernel, size_t position) {
  PyObject* obj = arg.ptr();
  if (THPVariable_Check(obj)) {
    const at::Tensor& tensor = THPVariable_Unpack(obj);
    TORCH_CHECK_VALUE(tensor.device().type() == c10::DeviceType::PrivateUse1,
                      "compiled accinte kernel ", kernel, ": argument ", position,
                      " is a tensor on ", tensor.device(), ", not on accinte");
    return reinterpret_cast<int64_t>(tensor.data_ptr());
  }
  if (PyLong_Check(obj)) { // bool is an int subclass
    return arg.cast<int64_t>();
  }
  if (PyFloat_Check(obj)) {
    const double value = PyFloat_AS_DOUBLE(obj);
    int64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
  }
  throw py::type_error("compiled accinte kernel " + kernel + ": argument " +
                       std::to_string(position) + " is a " +
                       std::string(py::str(py::type::of(arg).attr("__name__"))) +
                       "; expected a tensor, int or float");
}

void launch_compiled_kernel(uintptr_t entry, const std::string& name, uintptr_t stream_handle,
                            const py::tuple& args) {
  TORCH_CHECK_VALUE(entry != 0, "compiled accinte kernel ", name, " has no entry point");
  std::vector<int64_t> packed;
  packed.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    packed.push_back(pack_argument(args[i], name, i));
  }
  const auto stream =
      c10::accinte::getStreamFromHandle(reinterpret_cast<acStream_t>(stream_handle));
  const auto kernel = reinterpret_cast<KernelEntry>(entry);
  py::gil_scoped_release no_gil; // a blocking launch waits for the stream
  at::native::accinte::launch_cpu_kernel(
      stream,
      [kernel, packed = std::move(packed), name] {
        char error[1024] = {0};
        if (kernel(packed.data(), error, sizeof(error)) != 0) {
          throw std::runtime_error("compiled kernel " + name + ": " + error);
        }
      },
      lasting_name(name));
}
// LITERALINCLUDE END: COMPILER LAUNCH BINDING

} // namespace

// Adds _get_current_raw_stream and _launch_compiled_kernel to the _C module.
void add_inductor_functions(py::module_& m) {
  m.def(
      "_get_current_raw_stream",
      [](c10::DeviceIndex device) {
        return reinterpret_cast<uintptr_t>(c10::accinte::getCurrentAccInteStream(device).stream());
      },
      py::arg("device"),
      "The runtime handle (acStream_t) of the current stream of `device`: Inductor's "
      "get_raw_stream.");
  m.def("_launch_compiled_kernel", &launch_compiled_kernel, py::arg("entry"), py::arg("name"),
        py::arg("stream"), py::arg("args"),
        "Queues a compiled kernel's entry point on the stream whose handle is `stream` "
        "(acLaunchKernel, through launch_kernel). See Note [compiled kernels on accinte streams].");
}

const bool inductor_functions_registered = register_functions(&add_inductor_functions);

} // namespace torch_accinte
