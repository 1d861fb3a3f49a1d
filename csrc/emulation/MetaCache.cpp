#include <csrc/emulation/MetaCache.h>

#include <c10/util/flat_hash_map.h>

#include <cstring>
#include <mutex>

namespace at::native::accinte {
namespace {

// Bounds memory: the cache is cleared when it grows past this many entries.
constexpr size_t kMaxEntries = 1 << 14;

std::mutex g_mutex;
ska::flat_hash_map<std::string, MetaResult> g_cache; // guarded by g_mutex

template <typename T>
void put(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

void put_ints(std::string& key, c10::IntArrayRef values) {
  put(key, values.size());
  key.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
}

void put_tensor(std::string& key, const at::Tensor& t) {
  if (!t.defined()) {
    key.push_back('u');
    return;
  }
  key.push_back('t');
  put(key, static_cast<int8_t>(t.scalar_type()));
  put(key, static_cast<int8_t>(t.device().type()));
  put(key, static_cast<uint8_t>(t.is_conj() | t.is_neg() << 1 |
                                t.unsafeGetTensorImpl()->is_wrapped_number() << 2));
  put_ints(key, t.sizes());
  put_ints(key, t.strides());
  put(key, t.storage_offset());
  put(key, t.storage().nbytes());
}

bool put_value(std::string& key, const c10::IValue& v) {
  if (v.isTensor()) {
    put_tensor(key, v.toTensor());
  } else if (v.isNone()) {
    key.push_back('n');
  } else if (v.isBool()) {
    key.push_back(v.toBool() ? 'T' : 'F');
  } else if (v.isInt()) {
    key.push_back('i');
    put(key, v.toInt());
  } else if (v.isDouble()) {
    key.push_back('d');
    put(key, v.toDouble());
  } else if (v.isComplexDouble()) {
    key.push_back('c');
    put(key, v.toComplexDouble());
  } else if (v.isString()) {
    key.push_back('s');
    key.append(v.toStringRef());
    key.push_back('\0');
  } else if (v.isDevice()) {
    key.push_back('v');
    put(key, static_cast<int8_t>(v.toDevice().type()));
  } else if (v.isGenerator()) {
    key.push_back('g');
  } else if (v.isIntList()) {
    key.push_back('I');
    put_ints(key, v.toDimVector());
  } else if (v.isList()) {
    key.push_back('L');
    const auto elements = v.toListRef();
    put(key, elements.size());
    for (const auto& element : elements) {
      if (!put_value(key, element)) {
        return false;
      }
    }
  } else {
    return false;
  }
  return true;
}

} // namespace

std::optional<std::string> meta_signature(const c10::OperatorHandle& op,
                                          c10::ArrayRef<c10::IValue> args) {
  std::string key = op.operator_name().name;
  key.push_back('.');
  key.append(op.operator_name().overload_name);
  key.push_back('\0');
  for (const auto& value : args) {
    if (!put_value(key, value)) {
      return std::nullopt;
    }
  }
  return key;
}

std::optional<MetaResult> lookup_meta(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_cache.find(key);
  if (it == g_cache.end()) {
    return std::nullopt;
  }
  return it->second;
}

void remember_meta(std::string key, MetaResult result) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_cache.size() >= kMaxEntries) {
    g_cache.clear();
  }
  g_cache.emplace(std::move(key), std::move(result));
}

} // namespace at::native::accinte
