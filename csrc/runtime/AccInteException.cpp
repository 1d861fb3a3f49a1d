#include <csrc/runtime/AccInteException.h>

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
  TORCH_CHECK(false, "accinte error ", name, ": ", text, " (in ", call, " at ", file, ":",
              line, ")");
}
// LITERALINCLUDE END: RUNTIME ERROR TO EXCEPTION

} // namespace c10::accinte
