// Registration of sparse and nested tensors on accinte: the layout fallbacks
// on their dispatch keys, PyTorch's device-generic kernels for their metadata
// and construction, and the nested `_to_copy`.
// See Note [accinte layout fallbacks] in native/LayoutFallback.cpp.
#include <torch/library.h>

#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/values_native.h>

#include <csrc/emulation/fallback/LayoutFallback.h>
#include <csrc/aten/native/NestedCopy.h>

namespace at::native::accinte {

// LITERALINCLUDE START: OPERATOR LAYOUT REGISTRATION
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&layout_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&layout_fallback>());
}

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&layout_fallback>());
}
// LITERALINCLUDE END: OPERATOR LAYOUT REGISTRATION

// Metadata and construction: PyTorch's kernels for these work on any device
// (CUDA and Meta use them too) and read no elements.
TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_coo_tensor_with_dims_and_tensors",
         TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(at::native::new_with_dims_sparse));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse_csr));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse_csr));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse_csr));
  m.impl("values", TORCH_FN(at::native::values_sparse_csr));
  m.impl("crow_indices", TORCH_FN(at::native::crow_indices_sparse_csr));
  m.impl("col_indices", TORCH_FN(at::native::col_indices_sparse_csr));
  m.impl("ccol_indices", TORCH_FN(at::native::ccol_indices_sparse_csr));
  m.impl("row_indices", TORCH_FN(at::native::row_indices_sparse_csr));
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_to_copy", TORCH_FN(nested_to_copy));
}

// LITERALINCLUDE START: OPERATOR LAYOUT COMPOSITE OVERRIDES
// A composite kernel (CompositeExplicitAutograd, its NonFunctional twin,
// CompositeImplicitAutograd) is registered for every backend key, sparse and
// nested ones included, and wins over a fallback; where the CPU has a kernel
// of its own for the layout (`sparse_dim`, `copy_`, `mm`, a nested `linear`)
// the composite is wrong for it, so the fallback (the CPU's kernel) is
// registered by name for those operators.
void override_composites(torch::Library& m, c10::DispatchKey cpu_key,
                         c10::DispatchKey device_key) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNamesForDispatchKey(cpu_key)) {
    const auto op = dispatcher.findOp(name);
    if (!op || name.name.rfind("aten::", 0) != 0 ||
        !(op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
          op->hasKernelForDispatchKey(
              c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) ||
        op->hasKernelForDispatchKey(device_key)) {
      continue;
    }
    const std::string qualified =
        name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
    m.impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&layout_fallback>());
  }
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  override_composites(m, c10::DispatchKey::SparseCPU, c10::DispatchKey::SparsePrivateUse1);
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  override_composites(m, c10::DispatchKey::SparseCsrCPU, c10::DispatchKey::SparseCsrPrivateUse1);
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  override_composites(m, c10::DispatchKey::NestedTensorCPU,
                      c10::DispatchKey::NestedTensorPrivateUse1);
}
// LITERALINCLUDE END: OPERATOR LAYOUT COMPOSITE OVERRIDES

} // namespace at::native::accinte
