#include <csrc/runtime/AccInteException.h>

#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteKernel.h>

namespace c10::accinte {

// LITERALINCLUDE START: RUNTIME ERROR TO EXCEPTION
void throw_runtime_error(acError_t error, const char* call, const char* file, int line) {
  const char* name = acGetErrorName(error);
  const char* text = acGetErrorString(error);
  if (error == acErrorMemoryAllocation) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "accinte error ", name, ": ", text,
                     " (in ", call, " at ", file, ":", line, ")");
  }
  if (error == acErrorLaunchFailure) {
    TORCH_CHECK(false, "accinte error ", name, ": ", text, ": ", take_kernel_error(), " (in ",
                call, " at ", file, ":", line, ")");
  }
  if (error == acErrorStreamCaptureUnsupported) {
    // See Note [accinte graphs]: the call would wait for captured work. The
    // current stream is the capturing one in the usual case; capture_end
    // names the call in its own error.
    try {
      note_capture_invalidated(getCurrentAccInteStream(), call);
    } catch (...) {
    }
    TORCH_CHECK(false, "accinte error ", name, ": ", call, " is not allowed while a stream is "
                "capturing a graph: synchronization is not allowed while capturing, since "
                "captured work has not run (", text, "; at ", file, ":", line, ")");
  }
  TORCH_CHECK(false, "accinte error ", name, ": ", text, " (in ", call, " at ", file, ":",
              line, ")");
}
// LITERALINCLUDE END: RUNTIME ERROR TO EXCEPTION

} // namespace c10::accinte
