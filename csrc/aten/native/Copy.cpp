// Copies between accinte and the host, and within accinte (_copy_from).
//
// Every copy is queued on a stream: contiguous-compatible layouts as one
// acMemcpyAsync, anything else (strides, broadcasting, dtype conversion,
// conj/neg bits) as a kernel that runs the CPU copy on the device memory in
// place. A copy that reads or writes pageable host memory waits for its
// stream before returning, because the host buffer may be reused as soon as
// we return; a non_blocking copy to or from pinned memory does not wait, and
// the pinned block is kept from reuse until the stream is done with it.
#include <csrc/aten/native/Minimal.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuKernel.h>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>

#include <csrc/runtime/AccInteEvent.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostAllocator.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>


namespace at::native::accinte {

using c10::accinte::AccInteEvent;
using c10::accinte::AccInteGuard;
using c10::accinte::AccInteStream;
using c10::accinte::getCurrentAccInteStream;

namespace {

// True when the copy is a plain byte copy of one dense span.
bool is_bytewise_copy(const at::Tensor& src, const at::Tensor& dst) {
  return src.scalar_type() == dst.scalar_type() && src.sizes() == dst.sizes() &&
         src.strides() == dst.strides() && src.is_non_overlapping_and_dense() &&
         src.is_conj() == dst.is_conj() && src.is_neg() == dst.is_neg();
}

// Queues src -> dst on `stream`; both tensors' memory must stay valid until
// the stream reaches the copy.
void enqueue_copy(const AccInteStream& stream, const at::Tensor& src, const at::Tensor& dst) {
  if (is_bytewise_copy(src, dst)) {
    // The kernel path checks through cpu_alias; the byte copy checks here.
    for (const at::Tensor* t : {&src, &dst}) {
      if (t->is_privateuseone()) {
        check_kernel_argument(*t);
      }
    }
    acError_t queued = acSuccess;
    {
      // A full queue waits (Note [accinte launch queue depth]), and a copy
      // into pageable memory waits for the stream (Note [accinte copies into
      // pageable memory]): Note [accinte host waits and the GIL].
      c10::accinte::HostWaitGuard no_gil;
      queued = acMemcpyAsync(dst.data_ptr(), src.const_data_ptr(), src.nbytes(), acMemcpyDefault,
                             stream.stream());
    }
    ACCINTE_CHECK(queued);
    c10::accinte::maybe_block_after_launch(stream);
    return;
  }
  // Host-side sources are owned by the kernel, so the caller may drop them.
  at::Tensor from = src.is_privateuseone() ? cpu_alias(src) : src;
  at::Tensor to = dst.is_privateuseone() ? cpu_alias(dst) : dst;
  launch_cpu_kernel(stream, [from = std::move(from), to = std::move(to)]() mutable {
    to.copy_(from);
  }, "aten::_copy_from");
}

// LITERALINCLUDE START: HOST ALLOCATOR NON BLOCKING COPY
// After a copy that touched host memory: either keep the pinned block alive
// for the stream (non_blocking) or wait for the copy to finish.
void finish_host_copy(const AccInteStream& stream, const at::Tensor& host, bool non_blocking) {
  if (non_blocking && c10::accinte::is_pinned_ptr(host.const_data_ptr())) {
    const auto& data_ptr = host.storage().data_ptr();
    c10::accinte::getHostAllocator()->record_event(
        data_ptr.get(), data_ptr.get_context(), stream.unwrap());
    return;
  }
  c10::accinte::check_not_capturing(stream, "a copy between accinte and pageable host memory "
                                            "(Tensor.cpu(), .to(), printing...)");
  stream.synchronize();
}
// LITERALINCLUDE END: HOST ALLOCATOR NON BLOCKING COPY

// The shape check the CPU's copy_ makes through its TensorIterator, which
// copy_ builds only for the devices it knows: for any other it calls
// _copy_from first. dst is the iterator's first operand and is never
// resized, so src must broadcast to dst's shape; the messages are the
// iterator's. Checked on the calling thread, before anything is queued: a
// kernel would raise it at the next synchronize instead.
void check_copy_shapes(const at::Tensor& src, const at::Tensor& dst) {
  if (src.sizes().equals(dst.sizes())) {
    return;
  }
  const auto shape = at::infer_size_dimvector(dst.sizes(), src.sizes());
  TORCH_CHECK(dst.sizes().equals(shape), "output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", shape);
}

// LITERALINCLUDE START: STREAM CROSS DEVICE COPY
void copy_between_devices(const at::Tensor& src, const at::Tensor& dst) {
  const AccInteStream src_stream = getCurrentAccInteStream(src.device().index());
  const AccInteStream dst_stream = getCurrentAccInteStream(dst.device().index());
  // The copy runs on the source's stream once the destination's pending work
  // (earlier readers and writers of dst) is done; later work on the
  // destination's stream then waits for the copy. The same ordering CUDA uses.
  AccInteEvent dst_ready;
  dst_ready.record(dst_stream);
  dst_ready.block(src_stream);
  enqueue_copy(src_stream, src, dst);
  AccInteEvent copied;
  copied.record(src_stream);
  copied.block(dst_stream);
}
// LITERALINCLUDE END: STREAM CROSS DEVICE COPY

} // namespace

// LITERALINCLUDE START: COPY_FROM
at::Tensor _copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), "copy of an undefined tensor");
  check_copy_shapes(self, dst);
  if (self.numel() == 0 || dst.numel() == 0) {
    return dst;
  }
  const bool from_device = self.is_privateuseone();
  const bool to_device = dst.is_privateuseone();
  TORCH_CHECK(from_device || self.is_cpu(), "accinte cannot copy from ", self.device());
  TORCH_CHECK(to_device || dst.is_cpu(), "accinte cannot copy to ", dst.device());

  if (from_device && to_device) {
    // The checks the CPU's copy_ makes through TensorIterator; copy_ reaches
    // _copy_from before building one for any other device.
    at::assert_no_internal_overlap(dst);
    at::assert_no_partial_overlap(dst, self);
    if (self.device() != dst.device()) {
      copy_between_devices(self, dst);
    } else {
      AccInteGuard guard(dst.device().index());
      enqueue_copy(getCurrentAccInteStream(dst.device().index()), self, dst);
    }
  } else {
    const at::Tensor& device_side = from_device ? self : dst;
    const at::Tensor& host_side = from_device ? dst : self;
    AccInteGuard guard(device_side.device().index());
    const AccInteStream stream = getCurrentAccInteStream(device_side.device().index());
    enqueue_copy(stream, self, dst);
    finish_host_copy(stream, host_side, non_blocking);
  }
  return dst;
}
// LITERALINCLUDE END: COPY_FROM

at::Tensor _copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return accinte::_copy_from(self, dst, /*non_blocking=*/false); // not at::'s (ADL)
}

} // namespace at::native::accinte
