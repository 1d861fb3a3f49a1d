#pragma once
// DeviceCachingAllocator: the caching, stream-ordered allocator of one accinte
// device (the algorithm behind AccInteDeviceAllocator). Modelled on
// c10/cuda/CUDACachingAllocator.cpp's DeviceCachingAllocator; see
// Note [accinte caching allocator] for the design and the statistics.
//
// Thread-safe: every public member takes the device's mutex. Nothing here
// takes the GIL (contexts arrive already gathered).

#include <csrc/runtime/AccInteEvent.h>
#include <csrc/runtime/AccInteMemorySnapshot.h>
#include <csrc/runtime/AccInteStream.h>

#include <c10/core/AllocatorConfig.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/flat_hash_map.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace c10::accinte {

// Note [accinte caching allocator]
// Memory comes from the runtime in *segments* (acMalloc) and is handed out as
// *blocks*, sub-ranges of a segment. A freed block is not returned to the
// runtime; it goes back to a pool and is reused.
//
// Size classes (the constants below, CUDA's values):
//   - every request is rounded up to a multiple of 512 bytes;
//   - requests up to 1 MiB come from the small pool, whose segments are
//     2 MiB; larger requests come from the large pool, whose segments are
//     20 MiB for requests under 10 MiB, and the request rounded up to 2 MiB
//     otherwise;
//   - a free block larger than needed is split, unless the rest would be too
//     small to be useful (< 512 bytes in the small pool, <= 1 MiB in the large
//     pool); a freed block is merged with free neighbours in its segment.
// These bound fragmentation: a training loop that repeats the same sizes
// reaches a steady state where no new segment is needed.
//
// Streams: each block belongs to the stream that was current when it was
// allocated, and only allocations on that stream reuse it. Work on one stream
// runs in order, so a block freed on its own stream can be handed out again
// at once: the new user's work queues behind the old user's. Uses on other
// streams must be declared with recordStream (Tensor.record_stream); then the
// free records an event on each of those streams, and the block returns to
// its pool only when all of those events have completed (checked at each
// allocation, or waited for when the device runs out of memory).
//
// Out of memory: when acMalloc fails (or the per-process fraction would be
// exceeded), every cached block is released (after waiting for pending
// events) and the allocation is retried once (num_alloc_retries); if that
// fails too, torch.OutOfMemoryError is raised (num_ooms). While a graph
// capture is underway, neither the retry nor event queries happen: see
// Note [accinte allocator during capture] in AccInteCachingAllocator.cpp.
//
// Private pools (see Note [accinte graph memory] in AccInteCachingAllocatorPrivatePools.cpp)
// have block pools of their own; blocks never move between pools.
//
// PYTORCH_ALLOC_CONF changes these rules as it does CUDA's: see Note [accinte
// allocator settings] in AccInteCachingAllocatorSettings.cpp.
//
// Statistics have the meaning of torch.cuda.memory_stats, per pool:
//   allocation / allocated_bytes   blocks handed out and not yet freed by the user
//   active / active_bytes          blocks allocated or still awaiting events
//   requested_bytes                the unrounded sizes of active blocks
//   inactive_split / _bytes        free blocks in segments that are split
//   segment / reserved_bytes       segments obtained from acMalloc
// LITERALINCLUDE START: ALLOCATOR CONSTANTS
constexpr size_t kMinBlockSize = 512;          // every block is a multiple of this
constexpr size_t kSmallSize = 1 << 20;         // largest request of the small pool
constexpr size_t kSmallBuffer = 2 << 20;       // segment size of the small pool
constexpr size_t kMinLargeAlloc = 10 << 20;    // requests below this share 20 MiB segments
constexpr size_t kLargeBuffer = 20 << 20;      // shared large-pool segment size
constexpr size_t kRoundLarge = 2 << 20;        // large segments are multiples of this
// LITERALINCLUDE END: ALLOCATOR CONSTANTS
// Larger requests fail as out of memory before any rounding, which could
// otherwise wrap around size_t (2^62 bytes: more than any emulated device).
constexpr size_t kMaxRequest = size_t{1} << 62;

struct Block;
struct BlockPool;
struct PrivatePool;
struct ExpandableSegment;

// Size classes and splitting, with PYTORCH_ALLOC_CONF applied
// (AccInteCachingAllocatorSettings.cpp, Note [accinte allocator settings]).
/// The block size a request of `size` bytes is served with.
size_t round_size(size_t size);
/// The segment size acMalloc is asked for when no cached block fits `size`.
size_t segment_size(size_t size);
/// Whether `block`, serving `size` bytes, gives up its rest as a free block.
bool should_split(const Block* block, size_t size);
/// Whether a free block of `block_size` bytes may serve a `size` request
/// (max_split_size keeps oversize blocks for oversize requests).
bool may_serve(size_t block_size, size_t size);

/// A sub-range of a segment; a segment is a doubly linked list of blocks.
struct Block {
  DeviceIndex device;
  StreamId stream;                 // allocation stream (an id on `device`)
  size_t size;                     // bytes, a multiple of kMinBlockSize
  size_t requested_size = 0;       // the user's request, while allocated
  BlockPool* pool;
  char* ptr;
  bool allocated = false;          // handed out to the user
  Block* prev = nullptr;           // neighbours in the same segment
  Block* next = nullptr;
  int event_count = 0;             // events to complete before reuse
  size_t gc_count_base = 0;        // the pool's age clock when it became free
  ExpandableSegment* expandable = nullptr; // the segment that grows in place, if any
  ska::flat_hash_set<Stream> stream_uses; // other streams, from recordStream
  std::shared_ptr<c10::GatheredContext> context_when_allocated;
  std::shared_ptr<c10::GatheredContext> context_when_segment_allocated; // segment head only

  Block(DeviceIndex device, StreamId stream, size_t size, BlockPool* pool, char* ptr)
      : device(device), stream(stream), size(size), pool(pool), ptr(ptr) {}

  bool is_split() const { return prev != nullptr || next != nullptr; }
};

/// Free blocks of one size class, ordered by (stream, size, address) so that
/// the best fit on a stream is a lower_bound.
struct BlockPool {
  static bool less(const Block* a, const Block* b) {
    if (a->stream != b->stream) {
      return a->stream < b->stream;
    }
    if (a->size != b->size) {
      return a->size < b->size;
    }
    return a->ptr < b->ptr;
  }
  explicit BlockPool(bool small, PrivatePool* owner = nullptr)
      : blocks(&less), is_small(small), owner(owner) {}

  /// Puts a free block in the pool, stamped with the pool's age clock.
  void insert(Block* block) {
    block->gc_count_base = free_block_searches;
    blocks.insert(block);
  }
  /// Searches since `block` became free: its age for garbage collection.
  size_t age(const Block* block) const { return free_block_searches - block->gc_count_base; }

  std::set<Block*, bool (*)(const Block*, const Block*)> blocks;
  const bool is_small;
  PrivatePool* const owner;        // null for the device's shared pools
  size_t free_block_searches = 0;  // the age clock, run while garbage collection is on
};

/// Options of a pool made by torch.accinte.MemPool (graphs' pools use none).
struct PoolOptions {
  bool use_on_oom = false; // its free blocks serve allocations that found no room elsewhere
  bool no_split = false;   // its blocks are never split
};

/// The memory of a graph (or of graphs sharing it), or of a MemPool:
/// allocations routed to it, kept apart from everyone else's until released.
struct PrivatePool {
  PrivatePool(MempoolId_t id, PoolOptions options)
      : id(id), options(options), small_blocks(true, this), large_blocks(false, this) {}
  const MempoolId_t id;
  const PoolOptions options;
  int use_count = 1;  // MemPools, graphs and captures holding the pool; 0: released
  int segments = 0;   // segments still owned, free or not
  BlockPool small_blocks;
  BlockPool large_blocks;
};

/// A segment that grows and shrinks in place (PYTORCH_ALLOC_CONF's
/// expandable_segments; Note [accinte expandable segments]): an address range
/// reserved once, physical pages mapped at its end as it grows.
struct ExpandableSegment {
  BlockPool* pool;
  StreamId stream;
  char* base = nullptr;
  size_t reserved = 0;  // bytes of address space
  size_t page = 0;      // bytes mapped at a time
  std::vector<acMemGenericAllocationHandle_t> pages; // mapped physical memory, in order
  size_t mapped() const { return pages.size() * page; }
};

/// Says whether an allocation on a stream belongs to a capture's pool.
using AllocationFilter = std::function<bool(const AccInteStream&)>;

class DeviceCachingAllocator {
 public:
  explicit DeviceCachingAllocator(DeviceIndex device);

  /// Returns a block of at least `nbytes` usable in order on `stream`.
  /// Throws c10::OutOfMemoryError when the device (or the per-process
  /// fraction) has no room even after releasing the cache.
  Block* malloc(size_t nbytes, const AccInteStream& stream,
                std::shared_ptr<c10::GatheredContext> context);
  /// The user is done with `block`; reusable now, or once the streams
  /// recorded by record_stream are done with it.
  void free(Block* block, std::shared_ptr<c10::GatheredContext> context);
  /// Declares that `stream` uses `block` (ignored for its own stream).
  void record_stream(Block* block, const AccInteStream& stream);
  /// Waits for pending events, then returns every free, unsplit segment to
  /// the runtime (acFree), except those of private pools still in use.
  /// While a graph capture is underway, warns (once) and does nothing.
  void empty_cache();

  // Private pools (AccInteCachingAllocatorPrivatePools.cpp), CUDACachingAllocator's
  // beginAllocateToPool / endAllocateToPool / releasePool.
  /// Creates private pool `id` with a use count of 1, or raises the use
  /// count of a live one (a graph sharing it, a MemPool's context). Throws if
  /// the pool was released by every user.
  void create_or_incref_pool(MempoolId_t id, PoolOptions options = {});
  /// Until end_allocate_to_pool(id), allocations on a stream for which
  /// `filter` holds come from private pool `id`, made or increfed as
  /// create_or_incref_pool does.
  void begin_allocate_to_pool(MempoolId_t id, AllocationFilter filter);
  /// Allocations stop going to pool `id` (the capture into it is over).
  void end_allocate_to_pool(MempoolId_t id);
  /// One user of pool `id` is gone. With the last, the pool is released: its
  /// segments go back to the runtime at empty_cache (or out of memory) once
  /// all their blocks are free. Throws for an unknown pool.
  void release_pool(MempoolId_t id);
  /// Bytes reserved by private pool `id` (0 if there is none).
  size_t pool_reserved_bytes(MempoolId_t id);
  /// Users holding private pool `id` (0 if there is none, or it was released).
  int pool_use_count(MempoolId_t id);
  /// Returns the free, unsplit segments of private pool `id` to the runtime
  /// once the pool is released (torch.cuda's emptyCache(mempool_id)); a pool
  /// still in use keeps them.
  void empty_pool_cache(MempoolId_t id);

  /// A copy of the statistics (see the table in Note [accinte caching allocator]).
  CachingDeviceAllocator::DeviceStats stats();
  /// Zeroes the allocated/freed totals and the counters (num_ooms, ...).
  void reset_accumulated_stats();
  /// Sets every peak to its current value.
  void reset_peak_stats();

  /// Caps reserved memory at fraction * capacity (1.0: no cap beyond the
  /// device), and turns garbage collection on if PYTORCH_ALLOC_CONF asks for
  /// it. Throws unless 0 <= fraction <= 1.
  void set_memory_fraction(double fraction);
  /// The fraction last set (1.0 by default).
  double memory_fraction();

  // Defined in AccInteMemorySnapshot.cpp, with the rest of memory history.
  /// Appends this device's segments to `out`, records a "snapshot" trace
  /// entry, and returns the device's trace.
  std::vector<TraceEntry> snapshot(std::vector<SegmentInfo>& out);
  /// Drops the recorded trace (clear_history).
  void clear_trace();

 private:
  using StatTypes = std::array<bool, static_cast<size_t>(CachingAllocator::StatType::NUM_TYPES)>;

  BlockPool& pool_for(size_t size, const AccInteStream& stream);
  void release_private_pools();
  Block* find_free_block(BlockPool& pool, StreamId stream, size_t size);
  Block* find_free_block_in_oom_pools(StreamId stream, size_t size);
  bool garbage_collection_on() const;
  void garbage_collect_cached_blocks();
  void count_oversize(const Block* block, bool segment, bool add);
  Block* alloc_segment(size_t size, BlockPool& pool, StreamId stream, bool is_retry,
                       const std::shared_ptr<c10::GatheredContext>& context);
  Block* use_block(Block* block, size_t size, size_t requested,
                   std::shared_ptr<c10::GatheredContext> context);
  void free_block(Block* block, const std::shared_ptr<c10::GatheredContext>& context);
  size_t try_merge(Block* dst, Block* src, BlockPool& pool);
  void insert_events(Block* block);
  void insert_deferred_events();
  void process_events();
  void synchronize_and_free_events();
  void release_cached_blocks();
  void release_pool_blocks(PrivatePool& pool);
  // Expandable segments (AccInteCachingAllocatorExpandable.cpp).
  Block* grow_expandable_segment(BlockPool& pool, StreamId stream, size_t size,
                                 const std::shared_ptr<c10::GatheredContext>& context);
  ExpandableSegment* expandable_segment_for(BlockPool& pool, StreamId stream);
  void shrink_expandable_segment(Block* tail);
  void release_segment(Block* block);
  // Tells torch.profiler (profile_memory=True) of an allocation (delta > 0)
  // or free (delta < 0). Called with mutex_ held.
  void report_usage_to_profiler(void* ptr, int64_t delta) const;
  [[noreturn]] void raise_out_of_memory(size_t nbytes, size_t size, StreamId stream,
                                        std::shared_ptr<c10::GatheredContext> context);
  void record_trace(TraceEntry::Action action, const void* addr, size_t size, StreamId stream,
                    std::shared_ptr<c10::GatheredContext> context, RecordContext level);
  static StatTypes stat_types(const BlockPool& pool);

  const DeviceIndex device_;
  std::mutex mutex_; // guards everything below
  BlockPool small_blocks_{true};
  BlockPool large_blocks_{false};
  ska::flat_hash_set<Block*> active_blocks_;
  // Per stream, in record order: events that must complete before a block
  // freed with recorded stream uses may be reused.
  ska::flat_hash_map<Stream, std::deque<std::pair<AccInteEvent, Block*>>> outstanding_events_;
  // Blocks freed with recorded stream uses while a capture was underway:
  // their events are recorded once no capture is (Note [accinte allocator
  // during capture]).
  std::vector<Block*> deferred_until_no_capture_;
  CachingDeviceAllocator::DeviceStats stats_;
  size_t reserved_ = 0;                    // bytes in segments, what the fraction caps
  double fraction_ = 1.0;                  // set_per_process_memory_fraction
  size_t allowed_ = SIZE_MAX;              // fraction_ * capacity
  size_t fraction_limit_ = 0;              // fraction_ * capacity once set (garbage collection)
  TraceBuffer trace_;
  ska::flat_hash_map<MempoolId_t, std::unique_ptr<PrivatePool>, MempoolIdHash> private_pools_;
  std::vector<std::pair<MempoolId_t, AllocationFilter>> captures_underway_;
  std::vector<std::unique_ptr<ExpandableSegment>> expandable_segments_;
};

} // namespace c10::accinte
