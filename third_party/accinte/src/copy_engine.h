// copy_engine.h: the emulated copy engines (internal).
//
// A GPU moves large buffers with DMA copy engines while its host thread does
// other work; the emulation's equivalent is a small pool of host threads that
// share one large memcpy / memset. A copy below kParallelBytes runs on the
// calling thread alone: waking helpers costs more than it saves, and with
// few cores they compete with the host thread that queues the next kernels
// (2 MiB activations of a small CNN ran 5% slower split than whole).
#ifndef ACCINTE_SRC_COPY_ENGINE_H_
#define ACCINTE_SRC_COPY_ENGINE_H_

#include <cstddef>

namespace accinte {

// Copies at or above this size are split across the copy engines.
constexpr size_t kParallelBytes = size_t{8} << 20;

// memmove(dst, src, count), split across the copy engines when count is
// large and the ranges do not overlap. Returns when every byte is copied.
// The calling thread always takes part, so the call completes even when every
// engine is busy with another stream's copy. Thread-safe.
void copyBytes(void* dst, const void* src, size_t count);

// memset(dst, value, count) (low byte of value), split like copyBytes.
void setBytes(void* dst, int value, size_t count);

// Before a large copy into pageable host memory (typically a tensor the
// host just allocated, whose pages are not faulted in yet): asks the kernel
// for transparent huge pages over the 2 MiB-aligned part of [dst, dst+count),
// so the copy faults 2 MiB at a time instead of 4 KiB. Only the part the copy
// overwrites entirely is advised, so no memory is added. Best effort: does
// nothing below kHugePageAdviceBytes or where the kernel refuses.
void adviseHugePages(void* dst, size_t count);

constexpr size_t kHugePageAdviceBytes = size_t{4} << 20;

}  // namespace accinte

#endif  // ACCINTE_SRC_COPY_ENGINE_H_
