// fork.cpp: what a forked child may do with the runtime.
//
// fork() copies only the calling thread. A child of a process whose runtime
// owned worker threads, streams or allocations would inherit queues nobody
// drains and handles that refer to the parent's work, so such a child is
// "poisoned": every call fails with acErrorInitializationError, as CUDA fails
// in a child of an initialized parent. A child forked before the runtime was
// initialized (at most configuration and device queries had run) gets a
// working runtime of its own.
#include "runtime.h"

#include <pthread.h>

#include <atomic>

namespace accinte {
namespace {

std::atomic<bool> gInitialized{false};
std::atomic<bool> gPoisoned{false};

// LITERALINCLUDE START: RUNTIME FORK HANDLERS
// Runs in the parent just before fork(): takes every table lock so the child
// starts with consistent, unlocked tables.
void prepareFork() {
  streamTableMutex().lock();
  eventTableMutex().lock();
  allocationTableMutex().lock();
  graphTableMutex().lock();
  captureTableMutex().lock();
}

void releaseAfterFork() {
  captureTableMutex().unlock();
  graphTableMutex().unlock();
  allocationTableMutex().unlock();
  eventTableMutex().unlock();
  streamTableMutex().unlock();
}

void afterForkInChild() {
  if (gInitialized.load(std::memory_order_relaxed)) {
    gPoisoned.store(true, std::memory_order_relaxed);
  }
  // The child's copies of the locks were taken by the forking thread, which
  // is the child's only thread, so it may release them.
  releaseAfterFork();
}

// Registers the handlers when the library is loaded, so that even the first
// fork after load is observed.
struct ForkHandlers {
  ForkHandlers() {
    // pthread_atfork fails only with ENOMEM, while the library is being
    // loaded; there is no caller to tell, so the failure is deliberately
    // ignored: the runtime works, only a forked child would go unrefused.
    (void)pthread_atfork(prepareFork, releaseAfterFork, afterForkInChild);
  }
};
const ForkHandlers gForkHandlers;
// LITERALINCLUDE END: RUNTIME FORK HANDLERS

}  // namespace

void markInitialized() {
  gInitialized.store(true, std::memory_order_relaxed);
}

bool inPoisonedChild() {
  return gPoisoned.load(std::memory_order_relaxed);
}

}  // namespace accinte
