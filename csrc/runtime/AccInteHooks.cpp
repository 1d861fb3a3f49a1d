#include <csrc/runtime/AccInteHooks.h>

#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGenerator.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteHostAllocator.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteLifecycle.h>
#include <csrc/runtime/AccInteStream.h>

#include <algorithm>

namespace c10::accinte {

// LITERALINCLUDE START: HOOKS INIT
void AccInteHooks::init() const {
  int count = 0;
  // Fails with acErrorInitializationError in a forked child of a process
  // that had used the device: surfaces that as a clear RuntimeError.
  ACCINTE_CHECK(acGetDeviceCount(&count));
  run_init_hooks(); // what other parts of the backend make with the device
}

bool AccInteHooks::isAvailable() const {
  return device_count() > 0;
}

bool AccInteHooks::hasPrimaryContext(DeviceIndex device_index) const {
  return has_primary_context(device_index);
}
// LITERALINCLUDE END: HOOKS INIT

DeviceIndex AccInteHooks::deviceCount() const {
  return device_count();
}

void AccInteHooks::setCurrentDevice(DeviceIndex device) const {
  set_device(device);
}

DeviceIndex AccInteHooks::getCurrentDevice() const {
  return current_device();
}

DeviceIndex AccInteHooks::exchangeDevice(DeviceIndex device) const {
  return exchange_device(device);
}

DeviceIndex AccInteHooks::maybeExchangeDevice(DeviceIndex device) const {
  return maybe_exchange_device(device);
}

const at::Generator& AccInteHooks::getDefaultGenerator(DeviceIndex device_index) const {
  return getDefaultAccInteGenerator(device_index);
}

at::Generator AccInteHooks::getNewGenerator(DeviceIndex device_index) const {
  return createAccInteGenerator(device_index);
}

// LITERALINCLUDE START: HOOKS MEMORY
at::Device AccInteHooks::getDeviceFromPtr(void* data) const {
  acPointerAttributes attributes{};
  ACCINTE_CHECK(acPointerGetAttributes(&attributes, data));
  TORCH_CHECK(attributes.type == acMemoryTypeDevice, "Pointer ", data,
              " is not accinte device memory");
  return {DeviceType::PrivateUse1, static_cast<DeviceIndex>(attributes.device)};
}

bool AccInteHooks::isPinnedPtr(const void* data) const {
  return is_pinned_ptr(data);
}

at::Allocator* AccInteHooks::getPinnedMemoryAllocator() const {
  return getHostAllocator();
}

// Note [accinte storage growth]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Resizing a storage (UntypedStorage.resize_, Tensor.set_ or resize_ past the
// end) takes a new block from the caching allocator and moves the storage to
// it. Both steps are queued on the current stream, the stream the caching
// allocator gave the new block to, so they precede every kernel that stream
// runs on the storage afterwards and the host does not wait, as CUDA's
// cudaMemcpyAsync on the current stream does not:
//   - the bytes the storage keeps are copied (acMemcpyAsync). The old block
//     may go back to the allocator at once, but not to a user before the
//     copy has read it: the copy is recorded as a use on the current stream
//     (recordStream), so a block of another stream waits for the copy's
//     event, and one of this stream is only reused by later work of this
//     stream. Memory the caching allocator did not hand out (whose deleter
//     frees it at once) is still copied synchronously, and so is a storage
//     resized while its stream captures a graph: a queued copy would become
//     part of the graph, reading the old block at every replay (the runtime
//     refuses the synchronous copy where the capture forbids waiting);
//   - the grown part may hold what another tensor left in the block. The
//     CPU's allocator hands out fresh pages in that case more often than
//     not; accinte zero-fills it always (acMemsetAsync), so no tensor ever
//     reads memory it was never given.
// Growing an empty out= tensor (torch.arange(n, device=...), any CPU kernel
// that resizes its output) or a storage that holds data therefore stays
// asynchronous; a synchronous acMemcpy or acMemset would wait for the whole
// device at every such call. Storages restored by torch.load are not
// resizable, as the CPU's are not, so a checkpoint whose tensor reaches past
// its storage record is refused, not grown
// (torch_accinte/accinte/serialization.py).
namespace {

// Queues `work` (an acMemcpyAsync or acMemsetAsync on `stream`), which
// waits when the stream's queue is full: Note [accinte launch queue depth]
// and Note [accinte host waits and the GIL].
template <typename Work>
void queue_on(const AccInteStream& stream, Work&& work) {
  acError_t queued = acSuccess;
  {
    HostWaitGuard no_gil;
    queued = work();
  }
  ACCINTE_CHECK(queued);
  maybe_block_after_launch(stream);
}

// Copies the first `count` bytes of `storage` into `data`; see Note [accinte
// storage growth].
void copy_kept_bytes(const c10::Storage& storage, const at::DataPtr& data, size_t count,
                     const AccInteStream& stream) {
  const at::DataPtr& old = storage.data_ptr();
  if (old.get_deleter() != getDeviceAllocator()->raw_deleter() || is_stream_capturing(stream)) {
    // Synchronous, so the old memory may be freed as soon as we return.
    HostWaitGuard no_gil; // Note [accinte host waits and the GIL]
    ACCINTE_CHECK(acMemcpy(data.get(), old.get(), count, acMemcpyDeviceToDevice));
    return;
  }
  queue_on(stream, [&] {
    return acMemcpyAsync(data.get(), old.get(), count, acMemcpyDeviceToDevice, stream.stream());
  });
  getDeviceAllocator()->recordStream(old, stream.unwrap());
}

} // namespace

void AccInteHooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  const size_t old_size = storage.nbytes();
  AccInteGuard guard(storage.device().index());
  const AccInteStream stream = getCurrentAccInteStream(storage.device().index());
  at::DataPtr data = storage.allocator()->allocate(newsize);
  const size_t kept = std::min(old_size, newsize);
  if (kept > 0 && storage.data() != nullptr) {
    copy_kept_bytes(storage, data, kept, stream);
  }
  if (newsize > kept) {
    queue_on(stream, [&] {
      return acMemsetAsync(static_cast<char*>(data.get()) + kept, 0, newsize - kept,
                           stream.stream());
    });
  }
  // Frees the old block (see copy_kept_bytes for when it is reused).
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(data));
  storage.unsafeGetStorageImpl()->set_nbytes(newsize);
}
// LITERALINCLUDE END: HOOKS MEMORY

// LITERALINCLUDE START: HOOKS REGISTRATION
namespace {
// Registered once the library is loaded; the interface is never destroyed.
const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new AccInteHooks());
  return true;
}();
} // namespace
// LITERALINCLUDE END: HOOKS REGISTRATION

} // namespace c10::accinte
