// Carries AccInteTensorMeta (see Note [Tensor format]) through torch.save and
// torch.load.
//
// Note [Backend metadata in a checkpoint]
// torch.save stores, next to each tensor, a dict of str -> bool that
// torch::jit::getTensorMetadata fills (conj and neg bits, then the
// backend's own entries through the function registered below);
// torch.load hands the dict back to setTensorMetadata once the tensor is
// rebuilt on its device. Values must be booleans, so the format travels in
// the key: "accinte_format=<n>": true. A default format writes nothing, so
// checkpoints of plain tensors are what they would be without this backend.
// Tensors loaded onto another device (map_location="cpu") drop the entry:
// the setter registered for PrivateUse1 is only called for accinte tensors.
#include <torch/csrc/jit/serialization/pickler_helper.h>

#include <csrc/core/AccInteTensorMeta.h>

#include <string>
#include <string_view>
#include <unordered_map>

namespace c10::accinte {
namespace {

// LITERALINCLUDE START: SERIALIZATION BACKEND META
constexpr std::string_view kFormatKey = "accinte_format=";

void save_tensor_meta(const at::Tensor& t, std::unordered_map<std::string, bool>& metadata) {
  const int64_t format = get_tensor_format(t);
  if (format != kDefaultFormat) {
    metadata[std::string(kFormatKey) + std::to_string(format)] = true;
  }
}

void load_tensor_meta(const at::Tensor& t, std::unordered_map<std::string, bool>& metadata) {
  for (const auto& [key, present] : metadata) {
    if (!present || key.rfind(kFormatKey, 0) != 0) {
      continue;
    }
    const std::string value = key.substr(kFormatKey.size());
    int64_t format = -1;
    try {
      format = std::stoll(value);
    } catch (const std::exception&) {
      TORCH_CHECK(false, "Corrupt accinte tensor metadata in checkpoint: '", key, "'");
    }
    set_tensor_format(t, format);
  }
}

// Registered once the library is loaded. See Note [Backend metadata in a checkpoint].
const bool g_backend_meta_registered = [] {
  torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1, &save_tensor_meta,
                                        &load_tensor_meta);
  return true;
}();
// LITERALINCLUDE END: SERIALIZATION BACKEND META

} // namespace
} // namespace c10::accinte
