// The caching allocator's rules that PYTORCH_ALLOC_CONF changes: size
// classes, splitting, oversize blocks and garbage collection.
#include <csrc/runtime/AccInteCachingAllocator.h>

namespace c10::accinte {

// Note [accinte allocator settings]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch parses PYTORCH_ALLOC_CONF once for every accelerator, into
// c10::CachingAllocator::AcceleratorAllocatorConfig, and parses it again when
// torch.accinte.memory._set_allocator_settings (torch._C.
// _accelerator_setAllocatorSettings) is called. The allocator reads the
// settings at each decision, so a change applies from the next allocation:
//   - roundup_power2_divisions: a request is rounded up to the next of N
//     equal steps between two powers of two instead of to 512 bytes, so that
//     sizes that vary a little (a growing sequence length) share blocks;
//   - max_split_size_mb: blocks of this size or more are *oversize*: never
//     split, never handed to a smaller request, and handed to a larger one
//     only if it wastes less than max_non_split_rounding_mb (20 MiB by
//     default). A large tensor freed then cannot be carved into small ones
//     that pin its whole segment;
//   - garbage_collection_threshold: once set_per_process_memory_fraction was
//     called, a request that finds no free block first returns the oldest
//     cached segments to the runtime until reserved memory is below the
//     threshold (a fraction of the allowed memory), instead of waiting for an
//     out-of-memory to release everything. Age is counted in free-block
//     searches of the pool since the block became free;
//   - large_segment_size_mb: the shared large-pool segment size (20 MiB).
//   - expandable_segments: see Note [accinte expandable segments].

using Config = c10::CachingAllocator::AcceleratorAllocatorConfig;

namespace {

size_t round_up(size_t size, size_t multiple) {
  return multiple * ((size + multiple - 1) / multiple);
}

// CUDA's roundup_power2_next_division: `size` rounded up to the next of
// `divisions` equal steps between the powers of two around it.
size_t round_to_division(size_t size, size_t divisions) {
  if ((size & (size - 1)) == 0) {
    return size;
  }
  const size_t floor = size_t{1} << (63 - __builtin_clzll(size));
  const size_t step = floor >> (63 - __builtin_clzll(divisions));
  if (step == 0) {
    return floor << 1;
  }
  const size_t below = size & ~(step - 1);
  return below == size ? size : below + step;
}

} // namespace

// LITERALINCLUDE START: ALLOCATOR SIZE CLASSES
size_t round_size(size_t size) {
  if (size < kMinBlockSize) {
    return kMinBlockSize;
  }
  const size_t divisions = Config::roundup_power2_divisions(size);
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    return round_to_division(size, divisions);
  }
  return round_up(size, kMinBlockSize);
}

size_t segment_size(size_t size) {
  if (size <= kSmallSize) {
    return kSmallBuffer;
  }
  if (size < kMinLargeAlloc) {
    return Config::large_segment_size();
  }
  return round_up(size, kRoundLarge);
}

bool should_split(const Block* block, size_t size) {
  const size_t remaining = block->size - size;
  if (block->pool->owner != nullptr && block->pool->owner->options.no_split) {
    return false;
  }
  if (block->pool->is_small) {
    return remaining >= kMinBlockSize;
  }
  return size < Config::max_split_size() && remaining > kSmallSize;
}

bool may_serve(size_t block_size, size_t size) {
  const size_t max_split = Config::max_split_size();
  if (size < max_split) {
    return block_size < max_split; // an oversize block is kept for oversize requests
  }
  return block_size < size + Config::max_non_split_rounding_size();
}
// LITERALINCLUDE END: ALLOCATOR SIZE CLASSES

// Oversize statistics, counted when a block of at least max_split_size is
// handed out (or freed) and when such a segment is reserved (or released).
void DeviceCachingAllocator::count_oversize(const Block* block, bool segment, bool add) {
  if (block->size < Config::max_split_size()) {
    return;
  }
  CachingAllocator::Stat& stat = segment ? stats_.oversize_segments : stats_.oversize_allocations;
  if (add) {
    stat.increase(1);
  } else if (stat.current > 0) { // the setting may have changed in between
    stat.decrease(1);
  }
}

bool DeviceCachingAllocator::garbage_collection_on() const {
  return fraction_limit_ != 0 && Config::garbage_collection_threshold() > 0.0;
}

// LITERALINCLUDE START: ALLOCATOR GARBAGE COLLECTION
// Returns the oldest free, unsplit large segments to the runtime until the
// reserved total is below the threshold: each round frees every candidate at
// least as old as the candidates' mean age.
void DeviceCachingAllocator::garbage_collect_cached_blocks() {
  const auto limit = static_cast<size_t>(Config::garbage_collection_threshold() *
                                         static_cast<double>(fraction_limit_));
  if (reserved_ <= limit) {
    return;
  }
  const size_t target = reserved_ - limit;
  double total_age = 0.0;
  size_t candidates = 0;
  for (const Block* block : large_blocks_.blocks) {
    if (!block->is_split() && block->expandable == nullptr) {
      total_age += static_cast<double>(large_blocks_.age(block));
      candidates += 1;
    }
  }
  if (candidates == 0) {
    return;
  }
  synchronize_and_free_events();
  size_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && candidates > 0) {
    const double mean_age = total_age / static_cast<double>(candidates);
    freed = false;
    for (auto it = large_blocks_.blocks.begin(); it != large_blocks_.blocks.end();) {
      Block* block = *it++;
      const auto age = static_cast<double>(large_blocks_.age(block));
      if (!block->is_split() && block->expandable == nullptr && age >= mean_age) {
        freed = true;
        reclaimed += block->size;
        total_age -= age;
        candidates -= 1;
        release_segment(block);
      }
    }
  }
}
// LITERALINCLUDE END: ALLOCATOR GARBAGE COLLECTION

} // namespace c10::accinte
