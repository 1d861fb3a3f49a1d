#pragma once
// Error checking for calls into libaccinte. Every acError_t returned by the
// runtime goes through one of these macros: none is dropped.

#include <accinte/accinte.h>
#include <c10/util/Exception.h>

namespace c10::accinte {

/// Throws the c10 exception that matches `error`: c10::OutOfMemoryError for
/// acErrorMemoryAllocation (torch.OutOfMemoryError in Python), c10::Error
/// (RuntimeError) otherwise. The message names the failed call, the error's
/// name and its description.
[[noreturn]] C10_EXPORT void throw_runtime_error(
    acError_t error, const char* call, const char* file, int line);

} // namespace c10::accinte

// LITERALINCLUDE START: RUNTIME CHECK MACROS
/// ACCINTE_CHECK(call): runs `call` (an acError_t expression) and throws on
/// failure. The C10_CUDA_CHECK of this backend.
#define ACCINTE_CHECK(EXPR)                                            \
  do {                                                                 \
    const acError_t accinte_check_error_ = (EXPR);                     \
    if (C10_UNLIKELY(accinte_check_error_ != acSuccess)) {             \
      ::c10::accinte::throw_runtime_error(                             \
          accinte_check_error_, #EXPR, __FILE__, __LINE__);            \
    }                                                                  \
  } while (0)

/// ACCINTE_CHECK_WARN(call): for paths that must not throw (destructors,
/// noexcept interface methods); reports the failure as a warning instead.
#define ACCINTE_CHECK_WARN(EXPR)                                       \
  do {                                                                 \
    const acError_t accinte_check_error_ = (EXPR);                     \
    if (C10_UNLIKELY(accinte_check_error_ != acSuccess)) {             \
      TORCH_WARN("accinte warning: ", #EXPR, " failed with ",         \
                 acGetErrorName(accinte_check_error_), ": ",           \
                 acGetErrorString(accinte_check_error_));              \
    }                                                                  \
  } while (0)
// LITERALINCLUDE END: RUNTIME CHECK MACROS

/// ACCINTE_QUERY(call): for the query calls (acStreamQuery, acEventQuery),
/// which answer acErrorNotReady for "not yet": true on acSuccess, false on
/// acErrorNotReady, and any other error throws as ACCINTE_CHECK does, naming
/// the call.
#define ACCINTE_QUERY(EXPR) ::c10::accinte::query_result((EXPR), #EXPR, __FILE__, __LINE__)

namespace c10::accinte {
inline bool query_result(acError_t error, const char* call, const char* file, int line) {
  if (C10_LIKELY(error == acSuccess)) {
    return true;
  }
  if (error == acErrorNotReady) {
    return false;
  }
  throw_runtime_error(error, call, file, line);
}
} // namespace c10::accinte
