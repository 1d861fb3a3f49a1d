#include <csrc/runtime/AccInteHostAllocator.h>

#include <csrc/runtime/AccInteEvent.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteStream.h>

#include <atomic>

namespace c10::accinte {
namespace {

using Block = at::HostBlock<AccInteStream>;

// For torch.profiler's profile_memory=True: bytes of pinned blocks handed
// out, and bytes held from the runtime (acMallocHost).
std::atomic<int64_t> g_pinned_in_use{0};
std::atomic<int64_t> g_pinned_reserved{0};

// Pinned memory is host memory: reported on the CPU, as CUDA's is.
void report_pinned_usage(void* ptr, int64_t delta) {
  const int64_t in_use = g_pinned_in_use.fetch_add(delta, std::memory_order_relaxed) + delta;
  c10::reportMemoryUsageToProfiler(ptr, delta, static_cast<size_t>(in_use),
                                   static_cast<size_t>(g_pinned_reserved.load()),
                                   Device(DeviceType::CPU));
}

// LITERALINCLUDE START: HOST ALLOCATOR IMPL
// Supplies the runtime-specific steps; PyTorch's template does the caching.
struct AccInteHostAllocatorImpl final
    : public at::CachingHostAllocatorImpl<AccInteStream, AccInteEvent> {
 private:
  void allocate_host_memory(size_t size, void** ptr) override {
    ACCINTE_CHECK(acMallocHost(ptr, size));
    g_pinned_reserved.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
  }

  void free_block(Block* block) override {
    ACCINTE_CHECK_WARN(acFreeHost(block->ptr_));
    g_pinned_reserved.fetch_sub(static_cast<int64_t>(block->size_), std::memory_order_relaxed);
  }

  // Called when a block used by non-blocking copies is freed, once per
  // stream that used it. On a capturing stream an event would mark a point
  // in the graph, which the next allocation's query would refuse (and so
  // invalidate the capture), and the block is used by every replay anyway:
  // no event is recorded, so the block's event count never drops to zero and
  // it is never handed out again. A deliberate leak, as CUDA's host
  // allocator keeps a block used during a capture for the graph's life.
  void record_stream(std::optional<std::vector<AccInteEvent>>& events,
                     AccInteStream stream) override {
    if (C10_UNLIKELY(is_stream_capturing(stream))) {
      return;
    }
    AccInteEvent event;
    event.record(stream);
    events->push_back(std::move(event));
  }

  bool query_event(AccInteEvent& event) override { return event.query(); }

  AccInteStream get_current_stream() const override { return getCurrentAccInteStream(); }

  bool stream_is_capturing(AccInteStream stream) const override {
    return is_stream_capturing(stream);
  }
};

void free_pinned(void* ctx);

struct AccInteHostAllocator final
    : public at::CachingHostAllocatorInterface<AccInteHostAllocatorImpl, free_pinned> {
  at::DataPtr allocate(size_t size) override {
    at::DataPtr data = CachingHostAllocatorInterface::allocate(size);
    if (data.get_context() != nullptr) {
      report_pinned_usage(data.get(), static_cast<int64_t>(
                                          static_cast<Block*>(data.get_context())->size_));
    }
    return data;
  }
};
// LITERALINCLUDE END: HOST ALLOCATOR IMPL

// Leaked on purpose: pinned tensors may be freed by static destructors at exit.
AccInteHostAllocator* g_host_allocator = new AccInteHostAllocator();

void free_pinned(void* ctx) {
  if (C10_UNLIKELY(in_bad_fork())) {
    return;  // see Note [accinte fork safety]
  }
  const auto* block = static_cast<const Block*>(ctx);
  report_pinned_usage(block->ptr_, -static_cast<int64_t>(block->size_));
  g_host_allocator->free(ctx);
}

} // namespace

at::HostAllocator* getHostAllocator() {
  return g_host_allocator;
}

// LITERALINCLUDE START: HOST ALLOCATOR REGISTRATION
bool is_pinned_ptr(const void* ptr) {
  acPointerAttributes attributes{};
  ACCINTE_CHECK(acPointerGetAttributes(&attributes, ptr));
  return attributes.type == acMemoryTypeHost;
}

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, g_host_allocator)
// LITERALINCLUDE END: HOST ALLOCATOR REGISTRATION

} // namespace c10::accinte
