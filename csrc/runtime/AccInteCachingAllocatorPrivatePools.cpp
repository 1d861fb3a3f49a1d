// Private memory pools of the caching allocator: the memory of graphs and of
// torch.accinte.MemPool.
#include <csrc/runtime/AccInteCachingAllocator.h>

#include <csrc/runtime/AccInteGraphsUtils.h>

namespace c10::accinte {

// Note [accinte graph memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A captured graph replays its kernels on the addresses they were given at
// capture, so that memory must mean the same thing at every replay: nobody
// outside the graph may be handed it, even after the tensors the capture
// created are freed (a replay writes into them again). So, as in
// CUDACachingAllocator, every graph gets a *private pool* (keyed by a
// MempoolId_t) and, while it captures, allocations on its capturing stream
// (the capture's AllocationFilter) come from that pool:
//
//   - pool_for picks the pool; blocks remember theirs
//     (Block::pool), so a block freed later, by anyone, returns to it;
//   - a free block of a private pool is reused only by allocations into the
//     same pool, i.e. by the same capture (whose replays run in the same
//     order) or by a graph sharing the pool on purpose (pool() tokens,
//     graph_pool_handle), which must then be replayed in capture order;
//   - the pool's segments stay reserved, and empty_cache leaves them alone,
//     until the last graph using the pool is reset or destroyed
//     (release_pool); then empty_cache, or an out-of-memory retry, returns
//     each segment once all its blocks are free, and the pool disappears
//     with its last segment. A tensor made during capture and still held by
//     the user keeps its segment until it is freed.
//
// A torch.accinte.MemPool is the same kind of pool made by the user, with an
// id (0, n) like graph_pool_handle's: the MemPool object holds one use,
// use_mem_pool holds another while it routes the current thread's
// allocations to it (a filter on the thread, not the stream), and a graph
// captured with pool=mempool.id a third. Deleting the MemPool releases its
// use and returns its free segments (empty_pool_cache).

// LITERALINCLUDE START: GRAPH POOL CHOICE
BlockPool& DeviceCachingAllocator::pool_for(size_t size, const AccInteStream& stream) {
  for (const auto& [id, filter] : captures_underway_) {
    if (filter(stream)) {
      PrivatePool& pool = *private_pools_.at(id);
      return size <= kSmallSize ? pool.small_blocks : pool.large_blocks;
    }
  }
  return size <= kSmallSize ? small_blocks_ : large_blocks_;
}
// LITERALINCLUDE END: GRAPH POOL CHOICE

// LITERALINCLUDE START: GRAPH POOL LIFETIME
void DeviceCachingAllocator::create_or_incref_pool(MempoolId_t id, PoolOptions options) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = private_pools_.find(id);
  if (it == private_pools_.end()) {
    private_pools_.emplace(id, std::make_unique<PrivatePool>(id, options));
    return;
  }
  TORCH_CHECK(it->second->use_count > 0, "accinte memory pool (", id.first, ", ", id.second,
              ") was already released by every graph or MemPool that used it; share a pool "
              "only while one of its users is alive");
  it->second->use_count += 1;
}

void DeviceCachingAllocator::begin_allocate_to_pool(MempoolId_t id, AllocationFilter filter) {
  create_or_incref_pool(id);
  std::lock_guard<std::mutex> lock(mutex_);
  captures_underway_.emplace_back(id, std::move(filter));
}

void DeviceCachingAllocator::end_allocate_to_pool(MempoolId_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = captures_underway_.begin(); it != captures_underway_.end(); ++it) {
    if (it->first == id) {
      captures_underway_.erase(it);
      return;
    }
  }
  TORCH_INTERNAL_ASSERT(false, "end_allocate_to_pool: no capture into pool (", id.first, ", ",
                        id.second, ")");
}

void DeviceCachingAllocator::release_pool(MempoolId_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = private_pools_.find(id);
  TORCH_INTERNAL_ASSERT(it != private_pools_.end() && it->second->use_count > 0,
                        "release_pool: unknown accinte memory pool (", id.first, ", ", id.second,
                        ")");
  it->second->use_count -= 1;
  // Its memory is given back by the next empty_cache (release_private_pools).
}

// Called by release_cached_blocks, with pending events already processed.
void DeviceCachingAllocator::release_private_pools() {
  for (auto it = private_pools_.begin(); it != private_pools_.end();) {
    PrivatePool& pool = *it->second;
    if (pool.use_count == 0) {
      release_pool_blocks(pool);
    }
    it = pool.use_count == 0 && pool.segments == 0 ? private_pools_.erase(it) : std::next(it);
  }
}

void DeviceCachingAllocator::release_pool_blocks(PrivatePool& pool) {
  for (BlockPool* blocks : {&pool.large_blocks, &pool.small_blocks}) {
    for (auto b = blocks->blocks.begin(); b != blocks->blocks.end();) {
      Block* block = *b++;
      if (!block->is_split()) {
        release_segment(block);
      }
    }
  }
}
// LITERALINCLUDE END: GRAPH POOL LIFETIME

void DeviceCachingAllocator::empty_pool_cache(MempoolId_t id) {
  if (captures_underway()) {
    return; // acFree would wait for the device (Note [accinte allocator during capture])
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = private_pools_.find(id);
  if (it == private_pools_.end() || it->second->use_count > 0) {
    return;
  }
  synchronize_and_free_events();
  release_pool_blocks(*it->second);
  if (it->second->segments == 0) {
    private_pools_.erase(it);
  }
}

int DeviceCachingAllocator::pool_use_count(MempoolId_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = private_pools_.find(id);
  return it == private_pools_.end() ? 0 : it->second->use_count;
}

// Out of memory everywhere else: a free block of a MemPool made with
// use_on_oom=True serves the request. Called with mutex_ held.
Block* DeviceCachingAllocator::find_free_block_in_oom_pools(StreamId stream, size_t size) {
  for (auto& [id, pool] : private_pools_) {
    if (pool->options.use_on_oom && pool->use_count > 0) {
      BlockPool& blocks = size <= kSmallSize ? pool->small_blocks : pool->large_blocks;
      if (Block* block = find_free_block(blocks, stream, size)) {
        return block;
      }
    }
  }
  return nullptr;
}

size_t DeviceCachingAllocator::pool_reserved_bytes(MempoolId_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = private_pools_.find(id);
  if (it == private_pools_.end()) {
    return 0;
  }
  size_t bytes = 0;
  for (Block* block : active_blocks_) {
    if (block->pool->owner == it->second.get()) {
      bytes += block->size;
    }
  }
  for (const BlockPool* blocks : {&it->second->small_blocks, &it->second->large_blocks}) {
    for (const Block* block : blocks->blocks) {
      bytes += block->size;
    }
  }
  return bytes;
}

} // namespace c10::accinte
