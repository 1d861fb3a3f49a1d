#pragma once
// What the fallbacks share: the dense one (Fallback.cpp, FallbackSync.cpp) and
// the one for sparse and nested layouts (LayoutFallback.cpp). Walking the
// tensors of boxed arguments, the device a call runs on, the generators a
// random kernel draws from, the device check of outputs, and resizing an
// output to a CPU result. How their kernels run is the substrate's
// (CpuKernel.h).

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteStream.h>

#include <functional>
#include <vector>

namespace at::native::accinte {

/// Applies `f` to every tensor in a boxed argument: a tensor, or a list of
/// tensors or optional tensors (absent ones are skipped).
template <typename F>
void for_each_tensor(const c10::IValue& value, F&& f) {
  if (value.isTensor()) {
    f(value.toTensor());
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toListRef()) {
      if (element.isTensor()) {
        f(element.toTensor());
      }
    }
  }
}

/// A boxed argument rebuilt with every tensor mapped through `f` (a tensor,
/// or a list of the same element type); any other value is returned as is.
template <typename F>
c10::IValue map_tensors(const c10::IValue& value, F&& f) {
  if (value.isTensor()) {
    return f(value.toTensor());
  }
  if (value.isList()) {
    const c10::List<c10::IValue> list = value.toList();
    c10::impl::GenericList mapped(list.elementType());
    mapped.reserve(list.size());
    for (const c10::IValue& element : list) {
      mapped.push_back(element.isTensor() ? c10::IValue(f(element.toTensor())) : element);
    }
    return mapped;
  }
  return value;
}

/// The accinte device a call runs on: that of its accinte tensors, else an
/// indexed accinte device argument, else the current device. Throws the
/// same-device error for accinte tensors on two devices, and for accinte
/// tensors beside a host tensor with elements or components (a 0-dim host
/// tensor is a scalar and allowed, as on CUDA) unless `accepts_host_tensors`;
/// then (indexing) each index must be on the CPU or on the indexed tensor's
/// device, as PyTorch requires.
c10::Device call_device(c10::ArrayRef<c10::IValue> args, bool accepts_host_tensors);

/// Whether an argument of this type is a generator (`Generator?` included).
bool is_generator_type(const c10::TypePtr& type);

/// Replaces every generator argument of `schema` in `stack` (whose arguments
/// start at `first`) by the next engine of an accinte generator of `device`:
/// the one passed, or the device's default one. Throws for a generator of
/// another device. See Note [accinte random numbers].
void substitute_generators(const c10::FunctionSchema& schema, torch::jit::Stack& stack,
                           size_t first, c10::DeviceIndex device);

/// Refuses a mutated argument (an out= tensor, an in-place `self`) that is
/// not on `device`, as the CPU and CUDA do: a 0-dim host tensor may be an
/// input beside device tensors, never an output.
void check_outputs_on_device(c10::ArrayRef<c10::IValue> args, const std::vector<int>& mutated,
                             c10::Device device);

/// For an argument that a CPU kernel resized while writing it: gives the
/// device tensor `device` the sizes and strides of `host` (the CPU tensor the
/// kernel wrote). If `host` still lies in `device`'s memory, only the layout
/// changes; otherwise `host` is copied in by a kernel queued on `stream`.
void resize_and_copy(const at::Tensor& device, const at::Tensor& host,
                     const c10::accinte::AccInteStream& stream);

} // namespace at::native::accinte
