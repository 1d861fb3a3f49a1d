#include <csrc/emulation/fallback/LaunchCache.h>

#include <ATen/Context.h>
#include <c10/core/DefaultDtype.h>
#include <c10/util/SmallVector.h>
#include <c10/util/flat_hash_map.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace at::native::accinte {
namespace {

// Note [accinte launch cache without a lock]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every asynchronous launch looks its signature up, from any thread, while
// records are added only by first calls. The records live in one map under
// a mutex; each launching thread keeps its own copy of the entries it has
// looked up, and a hit there (every call of a steady state) takes no lock;
// the signature it found last is compared first, without hashing the key.
// A record is immutable once made. The generation counts the changes that
// could make a thread's copy wrong (a signature recorded again, the map
// cleared); a thread whose copy is of an older generation drops it.

// Bound memory: a map is cleared when it grows past this many entries (a
// training loop uses a few hundred signatures; every launching thread, the
// autograd engine's included, keeps a copy of those it uses).
constexpr size_t kMaxEntries = 1 << 14;
constexpr size_t kMaxThreadEntries = 1 << 12;

using Records = ska::flat_hash_map<std::string, std::shared_ptr<const LaunchRecord>>;

std::mutex g_mutex;
Records g_cache;                       // by g_mutex
std::atomic<uint64_t> g_generation{0}; // changed under g_mutex

// The calling thread's copy of the entries it has looked up.
struct ThreadRecords {
  uint64_t generation = 0;
  Records records;
  // The last signature found and its record: a loop launches one signature
  // over and over, and comparing keys costs less than hashing one.
  std::string last_signature;
  std::shared_ptr<const LaunchRecord> last_record;
};

// Builds one signature; remembers the storages seen so far.
class SignatureWriter {
 public:
  explicit SignatureWriter(std::string& key) : key_(key) {}

  bool put_value(const c10::IValue& v) {
    if (v.isTensor()) {
      put_tensor(v.toTensor());
    } else if (v.isNone()) {
      key_.push_back('n');
    } else if (v.isBool()) {
      key_.push_back(v.toBool() ? 'T' : 'F');
    } else if (v.isInt()) {
      key_.push_back('i');
      put(v.toInt());
    } else if (v.isDouble()) {
      key_.push_back('d');
      put(v.toDouble());
    } else if (v.isComplexDouble()) {
      key_.push_back('c');
      put(v.toComplexDouble());
    } else if (v.isString()) {
      key_.push_back('s');
      key_.append(v.toStringRef());
      key_.push_back('\0');
    } else if (v.isDevice()) {
      key_.push_back('v');
      put(static_cast<int8_t>(v.toDevice().type()));
    } else if (v.isGenerator()) {
      key_.push_back('g');
    } else if (v.isIntList()) {
      key_.push_back('I');
      put_ints(v.toDimVector());
    } else if (v.isList()) {
      key_.push_back('L');
      const auto elements = v.toListRef();
      put(elements.size());
      for (const auto& element : elements) {
        if (!put_value(element)) {
          return false;
        }
      }
    } else {
      return false;
    }
    return true;
  }

 private:
  template <typename T>
  void put(const T& value) {
    key_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }

  void put_ints(c10::IntArrayRef values) {
    put(values.size());
    key_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
  }

  // One resize of the key per tensor, the fields copied in after it: a
  // launch describes every tensor it passes, so this is on every launch.
  void put_tensor(const at::Tensor& t) {
    if (!t.defined()) {
      key_.push_back('u');
      return;
    }
    const c10::IntArrayRef sizes = t.sizes();
    const c10::IntArrayRef strides = t.strides();
    // Which earlier tensor shares this one's storage: overlap checks and
    // in-place semantics depend on it.
    const c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
    int16_t shared = -1;
    for (size_t i = 0; i < storages_.size() && shared < 0; ++i) {
      shared = storages_[i] == storage ? static_cast<int16_t>(i) : shared;
    }
    storages_.push_back(storage);
    const size_t array_bytes = sizes.size() * sizeof(int64_t);
    const size_t start = key_.size();
    key_.resize(start + 5 + 2 * (sizeof(size_t) + array_bytes) + sizeof(int64_t) +
                sizeof(size_t) + sizeof(shared));
    char* out = key_.data() + start;
    *out++ = 't';
    *out++ = static_cast<char>(t.scalar_type());
    *out++ = static_cast<char>(t.device().type());
    *out++ = static_cast<char>(t.layout());
    *out++ = static_cast<char>(t.is_conj() | t.is_neg() << 1 |
                               t.unsafeGetTensorImpl()->is_wrapped_number() << 2);
    out = write(out, sizes.size());
    out = write_bytes(out, sizes.data(), array_bytes);
    out = write(out, strides.size());
    out = write_bytes(out, strides.data(), array_bytes);
    out = write(out, t.storage_offset());
    out = write(out, t.storage().nbytes());
    write(out, shared);
  }

  template <typename T>
  static char* write(char* out, const T& value) {
    std::memcpy(out, &value, sizeof(T));
    return out + sizeof(T);
  }

  static char* write_bytes(char* out, const void* data, size_t n) {
    if (n > 0) {
      std::memcpy(out, data, n);
    }
    return out + n;
  }

  std::string& key_;
  c10::SmallVector<const c10::StorageImpl*, 8> storages_;
};

} // namespace

bool launch_signature(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                      std::string& key) {
  key.assign(op.operator_name().name);
  key.push_back('.');
  key.append(op.operator_name().overload_name);
  key.push_back('\0');
  // Global settings that change what kernels raise, warn or produce.
  const auto& context = at::globalContext();
  key.push_back(static_cast<char>(context.deterministicAlgorithms() |
                                  context.deterministicAlgorithmsWarnOnly() << 1 |
                                  context.deterministicFillUninitializedMemory() << 2));
  key.push_back(static_cast<char>(c10::typeMetaToScalarType(c10::get_default_dtype())));
  SignatureWriter writer(key);
  for (const auto& value : args) {
    if (!writer.put_value(value)) {
      return false;
    }
  }
  return true;
}

// See Note [accinte launch cache without a lock].
std::shared_ptr<const LaunchRecord> lookup_launch(const std::string& signature) {
  thread_local ThreadRecords mine;
  // Read before the map: a change after this read is seen at the next lookup.
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (mine.generation != generation) {
    mine.records.clear();
    mine.last_record.reset();
    mine.generation = generation;
  }
  if (mine.last_record != nullptr && signature == mine.last_signature) {
    return mine.last_record;
  }
  if (const auto it = mine.records.find(signature); it != mine.records.end()) {
    mine.last_signature = signature;
    mine.last_record = it->second;
    return it->second;
  }
  std::shared_ptr<const LaunchRecord> record;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = g_cache.find(signature);
    if (it == g_cache.end()) {
      return nullptr;
    }
    record = it->second;
  }
  if (mine.records.size() >= kMaxThreadEntries) {
    mine.records.clear();
  }
  mine.records.emplace(signature, record);
  return record;
}

void remember_launch(std::string signature, LaunchRecord record) {
  auto shared = std::make_shared<const LaunchRecord>(std::move(record));
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_cache.size() >= kMaxEntries) {
    g_cache.clear();
    g_generation.fetch_add(1, std::memory_order_release);
  }
  if (!g_cache.insert_or_assign(std::move(signature), std::move(shared)).second) {
    g_generation.fetch_add(1, std::memory_order_release); // replaced: copies are stale
  }
}

} // namespace at::native::accinte
