// error.cpp: names and descriptions of the error codes (cudaGetErrorName,
// cudaGetErrorString). Both functions work in any state, including a
// poisoned fork child, and return static strings that are never freed.
#include "runtime.h"

namespace {

struct ErrorText {
  const char* name;
  const char* description;
};

// One entry per acError_t value; a code missing here is "unrecognized".
// Switches on the integer: a C caller may pass any int, and a value outside
// the enumerators must not be assumed away.
ErrorText describe(int error) {
  switch (error) {
    case acSuccess:
      return {"acSuccess", "no error"};
    case acErrorInvalidValue:
      return {"acErrorInvalidValue", "invalid argument"};
    case acErrorMemoryAllocation:
      return {"acErrorMemoryAllocation", "out of memory"};
    case acErrorInitializationError:
      return {"acErrorInitializationError",
              "initialization error: the accinte runtime cannot be used in a forked child "
              "process once it has been initialized in the parent; use the 'spawn' start "
              "method for multiprocessing"};
    case acErrorInvalidDevice:
      return {"acErrorInvalidDevice", "invalid device ordinal"};
    case acErrorInvalidDevicePointer:
      return {"acErrorInvalidDevicePointer", "invalid device pointer"};
    case acErrorInvalidMemcpyDirection:
      return {"acErrorInvalidMemcpyDirection",
              "invalid copy direction for memcpy: the kind does not match the pointers"};
    case acErrorInvalidResourceHandle:
      return {"acErrorInvalidResourceHandle", "invalid resource handle"};
    case acErrorNotReady:
      return {"acErrorNotReady", "device not ready"};
    case acErrorLaunchFailure:
      return {"acErrorLaunchFailure", "unspecified launch failure: a kernel reported failure"};
    case acErrorInvalidHostPointer:
      return {"acErrorInvalidHostPointer", "invalid host pointer"};
    case acErrorNotSupported:
      return {"acErrorNotSupported",
              "operation not supported: either a call that waits for streams was made from "
              "a host function or kernel running on a stream, or IPC was asked for memory "
              "allocated when no file descriptor was left to make it shareable"};
    case acErrorMapBufferObjectFailed:
      return {"acErrorMapBufferObjectFailed",
              "IPC handle could not be opened, or IPC event waited for is lost: the "
              "exporting process freed the allocation, destroyed the event or exited "
              "(before the event's record completed), or the handle was not made by "
              "acIpcGetMemHandle / acIpcGetEventHandle"};
    case acErrorStreamCaptureUnsupported:
      return {"acErrorStreamCaptureUnsupported",
              "operation not permitted when stream is capturing: it would wait for or query "
              "work that is only being recorded into a graph; the capture is invalidated"};
    case acErrorStreamCaptureInvalidated:
      return {"acErrorStreamCaptureInvalidated",
              "operation failed due to a previous error during capture: the capture was "
              "invalidated and produced no graph"};
    case acErrorStreamCaptureUnmatched:
      return {"acErrorStreamCaptureUnmatched",
              "the capture was not initiated in this stream"};
    case acErrorStreamCaptureIsolation:
      return {"acErrorStreamCaptureIsolation",
              "a capturing stream and work outside its capture cannot wait for each other "
              "(only a non-default stream of the capture's device that is not capturing may "
              "join a capture by waiting for an event recorded in it)"};
    case acErrorStreamCaptureWrongThread:
      return {"acErrorStreamCaptureWrongThread",
              "attempt to end a capture begun by another thread (Global or ThreadLocal mode)"};
    case acErrorIllegalState:
      return {"acErrorIllegalState",
              "the stream is already capturing, or the graph is still being captured"};
    case acErrorIpcDescriptorsExhausted:
      return {"acErrorIpcDescriptorsExhausted",
              "out of file descriptors for IPC: the runtime keeps shareable memory, opened "
              "IPC memory and pages of interprocess events within a budget of half the soft "
              "RLIMIT_NOFILE (so that files and sockets still get descriptors), and that "
              "budget is spent, or the system refused a descriptor; destroy interprocess "
              "events, close opened IPC memory (release shared tensors) or raise the limit "
              "(ulimit -n)"};
    case acErrorStreamCaptureUnjoined:
      return {"acErrorStreamCaptureUnjoined",
              "the capture ended while a stream that joined it (by waiting for an event "
              "recorded in it) had work the capturing stream did not wait for: make it wait "
              "(wait_stream / acStreamWaitEvent) before ending the capture; the capture is "
              "invalidated"};
    case acErrorUnknown:
      return {"acErrorUnknown", "unknown error"};
  }
  return {"unrecognized error code", "unrecognized error code"};
}

}  // namespace

extern "C" const char* acGetErrorName(acError_t error) {
  return describe(static_cast<int>(error)).name;
}

extern "C" const char* acGetErrorString(acError_t error) {
  return describe(static_cast<int>(error)).description;
}
