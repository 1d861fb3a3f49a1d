// Expandable segments of the caching allocator (PYTORCH_ALLOC_CONF's
// expandable_segments:True).
#include <csrc/runtime/AccInteCachingAllocator.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>

#include <algorithm>

namespace c10::accinte {

// Note [accinte expandable segments]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A training step whose sizes change (a sequence length, a batch of varying
// shape) leaves free blocks that fit nothing it asks for next: ordinary
// segments fragment the device. An expandable segment is one range of
// address space per stream and pool, reserved once (acMemAddressReserve, the
// device's capacity, which costs nothing), with physical pages (acMemCreate:
// 2 MiB in the small pool, 20 MiB in the large) mapped at its end
// (acMemMap) when no free block fits. The new pages extend the free block at
// the end, or follow the last block, so a request larger than any page is
// served from one contiguous range, and later frees merge across the whole
// segment. empty_cache (and the out-of-memory retry) unmaps the pages the
// free block at the end covers whole (acMemUnmap, which waits for the
// device, as acFree does); a segment with no page left gives its range back.
//
// Statistics: a segment counts once while it has pages; reserved_bytes and
// the per-process fraction count mapped bytes; num_device_alloc and
// num_device_free count growths and shrinks; the trace records them as
// segment_map and segment_unmap. As in CUDA, only the device's shared pools
// use them: graphs and MemPools keep ordinary segments. Unlike CUDA, free
// pages in the middle of a segment stay mapped until the blocks after them
// are freed too.

namespace {

// The block of `segment` that ends at `end`, among `blocks`, or null.
template <typename Blocks>
Block* block_ending_at(const Blocks& blocks, const ExpandableSegment* segment, const char* end) {
  const auto it = std::find_if(blocks.begin(), blocks.end(), [&](const Block* block) {
    return block->expandable == segment && block->ptr + block->size == end;
  });
  return it == blocks.end() ? nullptr : *it;
}

} // namespace

ExpandableSegment* DeviceCachingAllocator::expandable_segment_for(BlockPool& pool,
                                                                  StreamId stream) {
  for (const auto& segment : expandable_segments_) {
    if (segment->pool == &pool && segment->stream == stream) {
      return segment.get();
    }
  }
  auto segment = std::make_unique<ExpandableSegment>();
  segment->pool = &pool;
  segment->stream = stream;
  segment->page = pool.is_small ? kSmallBuffer : kLargeBuffer;
  const size_t capacity = get_device_properties(device_).totalGlobalMem;
  segment->reserved = (capacity + segment->page - 1) / segment->page * segment->page;
  void* base = nullptr;
  {
    AccInteGuard guard(device_);
    ACCINTE_CHECK(acMemAddressReserve(&base, segment->reserved));
  }
  segment->base = static_cast<char*>(base);
  expandable_segments_.push_back(std::move(segment));
  return expandable_segments_.back().get();
}

// LITERALINCLUDE START: ALLOCATOR EXPANDABLE GROW
// Maps enough pages at the end of the stream's segment for a block of `size`
// bytes; returns that block, not yet in a pool, or null when the device (or
// the per-process fraction) has no room.
Block* DeviceCachingAllocator::grow_expandable_segment(
    BlockPool& pool, StreamId stream, size_t size,
    const std::shared_ptr<c10::GatheredContext>& context) {
  ExpandableSegment* segment = expandable_segment_for(pool, stream);
  char* const end = segment->base + segment->mapped();
  Block* tail = block_ending_at(pool.blocks, segment, end); // free, so it grows
  const size_t pages = (size - (tail ? tail->size : 0) + segment->page - 1) / segment->page;
  const size_t grown = pages * segment->page;
  if (grown > segment->reserved - segment->mapped() || reserved_ + grown > allowed_) {
    return nullptr;
  }
  AccInteGuard guard(device_);
  for (size_t i = 0; i < pages; ++i) {
    acMemGenericAllocationHandle_t handle = 0;
    acError_t error = acMemCreate(&handle, segment->page);
    if (error == acSuccess) {
      error = acMemMap(end + i * segment->page, segment->page, handle);
      if (error != acSuccess) {
        ACCINTE_CHECK(acMemRelease(handle));
      }
    }
    if (error != acSuccess) { // give back this growth's pages, then fail
      if (i > 0) {
        ACCINTE_CHECK(acMemUnmap(end, i * segment->page));
      }
      for (; i > 0; --i, segment->pages.pop_back()) {
        ACCINTE_CHECK(acMemRelease(segment->pages.back()));
      }
      if (error == acErrorMemoryAllocation) {
        return nullptr;
      }
      throw_runtime_error(error, "acMemMap(ptr, size, handle)", __FILE__, __LINE__);
    }
    segment->pages.push_back(handle);
  }
  const bool first = end == segment->base;
  reserved_ += grown;
  stats_.num_device_alloc += 1;
  record_trace(TraceEntry::SEGMENT_MAP, end, grown, stream, context, RecordContext::ALLOC);
  Block* block = tail;
  if (block != nullptr) {
    pool.blocks.erase(block);
    block->size += grown;
  } else {
    block = new Block(device_, stream, grown, &pool, end);
    block->expandable = segment;
    if (first) {
      block->context_when_segment_allocated = context;
    } else { // after the last block, which is in use
      block->prev = block_ending_at(active_blocks_, segment, end);
      TORCH_INTERNAL_ASSERT(block->prev != nullptr, "expandable segment without a last block");
      block->prev->next = block;
    }
  }
  const StatTypes types = stat_types(pool);
  for (size_t type = 0; type < types.size(); ++type) {
    if (!types[type]) {
      continue;
    }
    stats_.segment[type].increase(first ? 1 : 0);
    stats_.reserved_bytes[type].increase(grown);
    if (block->is_split()) { // counted as an inactive split block, as use_block expects
      stats_.inactive_split[type].increase(tail != nullptr ? 0 : 1);
      stats_.inactive_split_bytes[type].increase(grown);
    }
  }
  return block;
}
// LITERALINCLUDE END: ALLOCATOR EXPANDABLE GROW

// LITERALINCLUDE START: ALLOCATOR EXPANDABLE SHRINK
// Unmaps the pages that `block`, a free block in a pool, covers whole, if it
// is the last block of its segment; frees the segment with its last page.
void DeviceCachingAllocator::shrink_expandable_segment(Block* block) {
  ExpandableSegment* segment = block->expandable;
  char* const end = segment->base + segment->mapped();
  const size_t kept = (block->ptr - segment->base + segment->page - 1) / segment->page;
  char* const cut = segment->base + kept * segment->page;
  if (block->ptr + block->size != end || cut >= end) {
    return;
  }
  const size_t bytes = end - cut;
  {
    AccInteGuard guard(device_);
    ACCINTE_CHECK(acMemUnmap(cut, bytes));
    for (; segment->pages.size() > kept; segment->pages.pop_back()) {
      ACCINTE_CHECK(acMemRelease(segment->pages.back()));
    }
  }
  reserved_ -= bytes;
  stats_.num_device_free += 1;
  record_trace(TraceEntry::SEGMENT_UNMAP, cut, bytes, block->stream, nullptr,
               RecordContext::ALLOC);
  BlockPool& pool = *block->pool;
  const bool split = block->is_split();
  const bool gone = cut == block->ptr;
  const StatTypes types = stat_types(pool);
  for (size_t type = 0; type < types.size(); ++type) {
    if (!types[type]) {
      continue;
    }
    stats_.reserved_bytes[type].decrease(bytes);
    if (!split) {
      stats_.segment[type].decrease(1); // the block was the whole segment
    } else {
      stats_.inactive_split[type].decrease(gone ? 1 : 0);
      stats_.inactive_split_bytes[type].decrease(bytes);
    }
  }
  pool.blocks.erase(block);
  if (gone) {
    if (block->prev != nullptr) {
      block->prev->next = nullptr;
    }
    delete block;
  } else {
    block->size -= bytes;
    pool.insert(block);
  }
  if (segment->pages.empty()) {
    AccInteGuard guard(device_);
    ACCINTE_CHECK(acMemAddressFree(segment->base, segment->reserved));
    const auto it = std::find_if(expandable_segments_.begin(), expandable_segments_.end(),
                                 [&](const auto& s) { return s.get() == segment; });
    expandable_segments_.erase(it);
  }
}
// LITERALINCLUDE END: ALLOCATOR EXPANDABLE SHRINK

} // namespace c10::accinte
