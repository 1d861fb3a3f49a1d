#include <csrc/core/AccInteTensorMeta.h>

namespace c10::accinte {
namespace {

void check_accinte(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.defined() && t.is_privateuseone(), what,
              " expects an accinte tensor, but got a tensor on ",
              t.defined() ? t.device().str() : std::string("no device (undefined)"));
}

} // namespace

c10::intrusive_ptr<c10::BackendMeta> AccInteTensorMeta::clone(
    const c10::intrusive_ptr<c10::BackendMeta>& /*ptr*/) const {
  return c10::make_intrusive<AccInteTensorMeta>(format);
}

// LITERALINCLUDE START: BACKEND META ACCESSORS
int64_t get_tensor_format(const at::Tensor& t) {
  check_accinte(t, "get_tensor_format");
  const auto* meta =
      dynamic_cast<const AccInteTensorMeta*>(t.unsafeGetTensorImpl()->get_backend_meta());
  return meta != nullptr ? meta->format : kDefaultFormat;
}

void set_tensor_format(const at::Tensor& t, int64_t format) {
  check_accinte(t, "set_tensor_format");
  TORCH_CHECK(format >= 0, "A tensor format is a non-negative integer, got ", format);
  t.unsafeGetTensorImpl()->set_backend_meta(c10::make_intrusive<AccInteTensorMeta>(format));
}
// LITERALINCLUDE END: BACKEND META ACCESSORS

} // namespace c10::accinte
