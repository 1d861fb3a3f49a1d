#include <csrc/runtime/AccInteIPC.h>

#include <c10/core/StorageImpl.h>

#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteStream.h>

namespace c10::accinte {
namespace {

// LITERALINCLUDE START: IPC RECEIVED MAPPING
// An allocation of another process mapped here (acIpcOpenMemHandle), shared
// by every storage received from it: see Note [Sharing across processes].
// Unmapped with the last of them, by the process that mapped it (a forked
// child inherits the mapping, not the right to unmap the receiver's).
struct OpenedAllocation {
  void* const base;
  const pid_t owner; // getpid() of the receiver
  explicit OpenedAllocation(void* mapped) : base(mapped), owner(getpid()) {}
  OpenedAllocation(const OpenedAllocation&) = delete;
  OpenedAllocation& operator=(const OpenedAllocation&) = delete;
  ~OpenedAllocation() {
    if (owner == getpid()) {
      ACCINTE_CHECK_WARN(acIpcCloseMemHandle(base));
    }
  }
};

// The allocation `handle` names, mapped once per process while any storage
// received from it lives (as CUDA's caching allocator does for IPC handles):
// a receiver of many tensors of one block holds one mapping, one descriptor.
std::shared_ptr<OpenedAllocation> open_allocation(const acIpcMemHandle_t& handle,
                                                  DeviceIndex device) {
  static auto* mutex = new std::mutex();
  static auto* opened = new std::map<std::string, std::weak_ptr<OpenedAllocation>>();
  const std::string key(handle.reserved, sizeof(handle.reserved)); // pid, descriptor, name
  std::lock_guard<std::mutex> lock(*mutex);
  if (const auto it = opened->find(key); it != opened->end()) {
    if (auto allocation = it->second.lock()) {
      return allocation;
    }
  }
  AccInteGuard guard(device);
  void* base = nullptr;
  ACCINTE_CHECK(acIpcOpenMemHandle(&base, handle, acIpcMemLazyEnablePeerAccess));
  std::shared_ptr<OpenedAllocation> allocation;
  try {
    allocation = std::make_shared<OpenedAllocation>(base);
  } catch (...) {
    ACCINTE_CHECK_WARN(acIpcCloseMemHandle(base));
    throw;
  }
  for (auto it = opened->begin(); it != opened->end();) { // forget unmapped allocations
    it = it->second.expired() ? opened->erase(it) : std::next(it);
  }
  (*opened)[key] = allocation;
  return allocation;
}

// What a received storage owns: its share of the mapping and the sender's
// reference count, both on behalf of the process that opened them.
struct ReceivedMapping {
  std::shared_ptr<OpenedAllocation> allocation;
  std::atomic<int64_t>* counter;
  pid_t owner; // getpid() of the receiver
};

// DataPtr deleter of a received storage: lets go of the mapping (unmapped
// with the last storage of the allocation), then tells the sender. In a
// forked child of the receiver it does neither: the child inherits the
// counter's shared mapping but not the receiver's reference, which the
// receiver releases itself; decrementing here would let the sender reuse a
// block the receiver still maps.
void close_mapping(void* context) {
  std::unique_ptr<ReceivedMapping> mapping(static_cast<ReceivedMapping*>(context));
  if (mapping->owner != getpid()) {
    return;
  }
  mapping->allocation.reset();
  release_reference(*mapping->counter);
}
// LITERALINCLUDE END: IPC RECEIVED MAPPING

} // namespace

// LITERALINCLUDE START: IPC SHARE STORAGE
IpcSentStorage share_storage(const c10::Storage& storage) {
  TORCH_CHECK(storage.device().is_privateuseone(),
              "share_storage expects an accinte storage, got one on ", storage.device());
  TORCH_CHECK(storage.nbytes() > 0 && storage.data() != nullptr,
              "Cannot share an empty accinte storage: it has no memory to map");
  IpcSentStorage sent;
  IpcStorageHandle& out = sent.handle;
  out.device = storage.device().index();
  out.nbytes = storage.nbytes();
  void* data = const_cast<void*>(storage.data());
  acPointerAttributes attributes{};
  ACCINTE_CHECK(acPointerGetAttributes(&attributes, data));
  TORCH_CHECK(attributes.type == acMemoryTypeDevice,
              "The memory of an accinte storage is not device memory: ", data);
  out.offset = static_cast<size_t>(static_cast<char*>(data) -
                                   static_cast<char*>(attributes.basePointer));
  ACCINTE_CHECK(acIpcGetMemHandle(&out.handle, data));
  // What the receiver waits for: the work queued so far on our current stream.
  sent.event = AccInteEvent(/*enable_timing=*/false, /*interprocess=*/true);
  sent.event.record(getCurrentAccInteStream(out.device));
  out.event = sent.event.ipc_handle();
  out.counter = new_sent_counter();  // last: nothing below can throw and leak it
  return sent;
}
// LITERALINCLUDE END: IPC SHARE STORAGE

// LITERALINCLUDE START: IPC WAIT EVENT
void wait_shared_event(const IpcStorageHandle& handle) {
  check_device_index(handle.device);
  // The opened event dies at once: the queued wait keeps what it needs.
  AccInteEvent(handle.device, handle.event).block(getCurrentAccInteStream(handle.device));
}
// LITERALINCLUDE END: IPC WAIT EVENT

// LITERALINCLUDE START: IPC OPEN STORAGE
c10::Storage open_shared_storage(const IpcStorageHandle& handle) {
  std::atomic<int64_t>* counter = received_counter(handle.counter);
  const c10::Device device(c10::DeviceType::PrivateUse1, handle.device);
  std::shared_ptr<OpenedAllocation> allocation;
  try {
    check_device_index(handle.device);
    wait_shared_event(handle);
    allocation = open_allocation(handle.handle, handle.device);
  } catch (...) {
    release_reference(*counter); // nothing will hold the memory: give the reference back
    throw;
  }
  // From here on the DataPtr owns the mapping and the reference: its deleter
  // releases both, also when a check below throws.
  void* base = allocation->base;
  auto mapping =
      std::make_unique<ReceivedMapping>(ReceivedMapping{std::move(allocation), counter, getpid()});
  c10::DataPtr data(static_cast<char*>(base) + handle.offset, mapping.release(), &close_mapping,
                    device);
  acPointerAttributes attributes{};
  ACCINTE_CHECK(acPointerGetAttributes(&attributes, base));
  TORCH_CHECK(handle.offset <= attributes.size && handle.nbytes <= attributes.size - handle.offset,
              "A shared accinte storage of ", handle.nbytes, " bytes at offset ", handle.offset,
              " does not fit in the ", attributes.size, "-byte allocation its handle names");
  // Through the backend's factory, so that it is an AccInteStorageImpl too.
  return c10::Storage(c10::make_storage_impl(
      c10::StorageImpl::use_byte_size_t(), static_cast<int64_t>(handle.nbytes), std::move(data),
      /*allocator=*/nullptr, /*resizable=*/false, device));
}
// LITERALINCLUDE END: IPC OPEN STORAGE

void release_shared_reference(const IpcStorageHandle& handle) {
  release_reference(*received_counter(handle.counter));
}

} // namespace c10::accinte
