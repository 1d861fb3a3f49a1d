#include <csrc/runtime/AccInteHooks.h>

#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGenerator.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteHostAllocator.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

#include <algorithm>

namespace c10::accinte {

// LITERALINCLUDE START: HOOKS INIT
void AccInteHooks::init() const {
  int count = 0;
  // Fails with acErrorInitializationError in a forked child of a process
  // that had used the device: surfaces that as a clear RuntimeError.
  ACCINTE_CHECK(acGetDeviceCount(&count));
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
// Growing a storage (UntypedStorage.resize_, Tensor.set_ or resize_ past the
// end) takes a new block from the caching allocator, whose bytes may be what
// another tensor left there. The CPU's allocator hands out fresh pages in
// that case more often than not; accinte zero-fills the grown part always,
// so no tensor ever reads memory it was never given. The fill is queued on
// the current stream (acMemsetAsync), the stream the caching allocator gave
// the new block to, so it precedes every kernel that stream runs on the
// storage afterwards and the host does not wait: growing an empty out=
// tensor (torch.arange(n, device=...), any CPU kernel that resizes its
// output) stays asynchronous. A synchronous acMemset would wait for the
// whole device at every such call. Storages restored by
// torch.load are not resizable, as the CPU's are not, so a checkpoint whose
// tensor reaches past its storage record is refused, not grown
// (torch_accinte/accinte/serialization.py).
void AccInteHooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  const size_t old_size = storage.nbytes();
  AccInteGuard guard(storage.device().index());
  at::DataPtr data = storage.allocator()->allocate(newsize);
  const size_t kept = std::min(old_size, newsize);
  if (kept > 0 && storage.data() != nullptr) {
    // Synchronous, so the old block may be freed as soon as we return.
    HostWaitGuard no_gil; // Note [accinte host waits and the GIL]
    ACCINTE_CHECK(acMemcpy(data.get(), storage.data(), kept, acMemcpyDeviceToDevice));
  }
  if (newsize > kept) {
    // The grown part comes from the caching allocator and may hold another
    // tensor's freed data: never hand that out (see Note [accinte storage
    // growth]).
    const AccInteStream stream = getCurrentAccInteStream(storage.device().index());
    acError_t queued = acSuccess;
    {
      // A full queue waits: Note [accinte launch queue depth] and Note
      // [accinte host waits and the GIL].
      HostWaitGuard no_gil;
      queued = acMemsetAsync(static_cast<char*>(data.get()) + kept, 0, newsize - kept,
                             stream.stream());
    }
    ACCINTE_CHECK(queued);
    maybe_block_after_launch(stream);
  }
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
