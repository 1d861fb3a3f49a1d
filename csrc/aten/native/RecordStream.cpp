#include <csrc/aten/native/RecordStream.h>

#include <c10/core/CachingDeviceAllocator.h>

namespace at::native::accinte {

// LITERALINCLUDE START: ALLOCATOR RECORD STREAM KERNEL
void record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream: expected an accinte stream, got a stream on ", stream.device());
  c10::getDeviceAllocator(c10::DeviceType::PrivateUse1)
      ->recordStream(self.storage().data_ptr(), stream);
}
// LITERALINCLUDE END: ALLOCATOR RECORD STREAM KERNEL

} // namespace at::native::accinte
