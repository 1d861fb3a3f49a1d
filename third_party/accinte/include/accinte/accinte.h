/*
 * libaccinte: the emulated accinte device runtime.
 *
 * A C API shaped like the CUDA runtime (libcudart): every call `acFoo` mirrors
 * `cudaFoo`, returns an acError_t, and never throws across the C boundary.
 * It has no dependency on PyTorch; the table in ../README.md maps each call to
 * its CUDA counterpart.
 *
 * The device is emulated on the host CPU:
 *   - device memory is host memory that the runtime owns; under strict mode
 *     (ACCINTE_STRICT=1) it is mapped PROT_NONE, so a host dereference faults
 *     exactly as it would on real hardware, except inside the runtime's own
 *     access windows (memcpy, memset and launched kernels);
 *   - each stream owns one worker thread that runs the stream's queued tasks
 *     in order; a stream is busy until its last task has *finished*; a host
 *     thread that waits for a stream runs the queued tasks nobody has
 *     started itself, and the worker takes work that reached its idle stream
 *     only after a launch latency (ACCINTE_LAUNCH_LATENCY_US, default 20 us);
 *   - the current device is per host thread, like CUDA's;
 *   - device memory is shared memory (a memfd per allocation), so another
 *     process can map it through an IPC handle (acIpcGetMemHandle).
 *
 * Environment:
 *   ACCINTE_DEVICE_COUNT   number of devices (default 2, at most
 *                          ACCINTE_MAX_DEVICE_COUNT)
 *   ACCINTE_DEVICE_MEMORY  capacity of each device in bytes, with an optional
 *                          K/M/G/T suffix (default 4G)
 *   ACCINTE_STRICT         1: device memory is unreadable to host code
 *
 * Errors: calls return a specific code (never a generic one when a specific
 * one applies). Errors raised by a kernel running on a stream are reported by
 * the next call that waits on that stream (acStreamSynchronize,
 * acEventSynchronize, acDeviceSynchronize), then cleared, as CUDA reports
 * non-sticky asynchronous errors.
 *
 * Threads: every call may be made from any host thread. Host functions and
 * kernels run on the stream's worker thread, or on a host thread that waits
 * for the stream; inside them, calls that wait for streams (the *Synchronize
 * calls, acFree, acMemcpy, acMemset, acStreamDestroy) fail with
 * acErrorNotSupported instead of deadlocking.
 */
#ifndef ACCINTE_ACCINTE_H_
#define ACCINTE_ACCINTE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define ACCINTE_NODISCARD [[nodiscard]]
extern "C" {
#else
#define ACCINTE_NODISCARD
#endif

#define ACCINTE_API __attribute__((visibility("default")))

/* Error codes (cudaError_t). Values are part of the ABI. */
// LITERALINCLUDE START: RUNTIME ERROR CODES
typedef enum acError {
  acSuccess = 0,
  acErrorInvalidValue = 1,          /* an argument is out of range or NULL */
  acErrorMemoryAllocation = 2,      /* the device (or host) is out of memory */
  acErrorInitializationError = 3,   /* use after fork: runtime is unusable here */
  acErrorInvalidDevice = 4,         /* device ordinal out of range */
  acErrorInvalidDevicePointer = 5,  /* pointer is not a live device allocation */
  acErrorInvalidMemcpyDirection = 6,/* kind does not match the pointers */
  acErrorInvalidResourceHandle = 7, /* stream or event handle is not valid */
  acErrorNotReady = 8,              /* queried work has not finished yet */
  acErrorLaunchFailure = 9,         /* a kernel on a stream reported failure */
  acErrorInvalidHostPointer = 10,   /* pointer is not a live pinned allocation */
  acErrorNotSupported = 11,         /* not allowed here: a call that waits for
                                       streams, made from a host function or
                                       kernel running on a stream's worker; or
                                       an IPC export of memory that is not
                                       shareable (see acIpcGetMemHandle) */
  acErrorMapBufferObjectFailed = 12,/* an IPC handle could not be opened: the
                                       exporting process exited or freed the
                                       memory (or destroyed the event), or the
                                       handle is corrupt; or an IPC event's
                                       exporter exited before the record
                                       being waited for completed */
  acErrorStreamCaptureUnsupported = 13, /* not allowed while a stream is
                                       capturing (a synchronize or query of
                                       the capturing stream, ...); the
                                       capture is invalidated */
  acErrorStreamCaptureInvalidated = 14, /* the capture was invalidated by an
                                       earlier error and produced no graph */
  acErrorStreamCaptureUnmatched = 15, /* acStreamEndCapture on a stream that
                                       is not capturing */
  acErrorStreamCaptureIsolation = 16, /* a capturing stream was made to wait
                                       for work outside the capture, or a
                                       stream that cannot join a capture
                                       (default, other device, capturing
                                       another graph) to wait for a point
                                       in it */
  acErrorStreamCaptureWrongThread = 17, /* the capture must end on the thread
                                       that began it (Global/ThreadLocal) */
  acErrorIllegalState = 18,         /* the stream is already capturing, or
                                       the graph is still being captured */
  acErrorStreamCaptureUnjoined = 19, /* the capture ended while a stream
                                       that joined it had work no other
                                       stream of the capture waited for */
  acErrorIpcDescriptorsExhausted = 20, /* no file descriptor left for IPC:
                                       the runtime's budget of shareable
                                       descriptors (half the soft
                                       RLIMIT_NOFILE) is spent, or the system
                                       refused one; destroy interprocess
                                       events or close IPC memory first */
  acErrorUnknown = 999              /* an unexpected internal failure */
} acError_t;
// LITERALINCLUDE END: RUNTIME ERROR CODES

/* Direction of a copy (cudaMemcpyKind). acMemcpyDefault infers it from the
 * pointers, as with unified addressing. */
typedef enum acMemcpyKind {
  acMemcpyHostToHost = 0,
  acMemcpyHostToDevice = 1,
  acMemcpyDeviceToHost = 2,
  acMemcpyDeviceToDevice = 3,
  acMemcpyDefault = 4
} acMemcpyKind;

/* What a pointer refers to (cudaMemoryType). */
typedef enum acMemoryType {
  acMemoryTypeUnregistered = 0, /* plain host memory unknown to the runtime */
  acMemoryTypeHost = 1,         /* pinned host memory from acMallocHost */
  acMemoryTypeDevice = 2        /* device memory from acMalloc */
} acMemoryType;

/* cudaPointerAttributes, plus the allocation's base and size. */
typedef struct acPointerAttributes {
  acMemoryType type;
  int device;         /* owning device, -1 for host memory */
  void* devicePointer;/* the pointer itself when type != Unregistered */
  void* basePointer;  /* start of the allocation containing the pointer */
  size_t size;        /* size in bytes of that allocation */
} acPointerAttributes;

/* The most devices a process can have: the bound of ACCINTE_DEVICE_COUNT.
 * Stated here only; the runtime and the backend's per-device tables use it. */
#define ACCINTE_MAX_DEVICE_COUNT 64

/* cudaDeviceProp, reduced to what the emulation can state truthfully. */
typedef struct acDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major;               /* compute capability */
  int minor;
  int multiProcessorCount; /* host CPUs the kernels may use */
} acDeviceProp;

/* An IPC handle to device memory (cudaIpcMemHandle_t): plain bytes that may
 * be copied, stored and sent to another process by any means. */
#define ACCINTE_IPC_HANDLE_SIZE 64
typedef struct acIpcMemHandle_st {
  char reserved[ACCINTE_IPC_HANDLE_SIZE];
} acIpcMemHandle_t;

/* acIpcOpenMemHandle flags (cudaIpcMem*). Peer access is always on. */
#define acIpcMemLazyEnablePeerAccess 0x1u

/* An IPC handle to an interprocess event (cudaIpcEventHandle_t): plain bytes,
 * like acIpcMemHandle_t. */
typedef struct acIpcEventHandle_st {
  char reserved[ACCINTE_IPC_HANDLE_SIZE];
} acIpcEventHandle_t;

/* Opaque handles. A NULL acStream_t names the device's default stream. */
typedef struct acStream_st* acStream_t;
typedef struct acEvent_st* acEvent_t;
/* A graph captured from a stream (cudaGraph_t), its executable form
 * (cudaGraphExec_t), and a reference-counted resource whose lifetime a graph
 * can extend (cudaUserObject_t). */
typedef struct acGraph_st* acGraph_t;
typedef struct acGraphExec_st* acGraphExec_t;
typedef struct acUserObject_st* acUserObject_t;

/* How a capture treats potentially unsafe calls (cudaStreamCaptureMode):
 * synchronous copies, memsets and frees that wait for a device with a
 * capturing stream. Global: refused from every thread; ThreadLocal: refused
 * from the capturing thread; Relaxed: allowed. Calls that inherently
 * conflict with capture (synchronizing or querying the capturing stream,
 * acDeviceSynchronize) are refused in every mode. */
typedef enum acStreamCaptureMode {
  acStreamCaptureModeGlobal = 0,
  acStreamCaptureModeThreadLocal = 1,
  acStreamCaptureModeRelaxed = 2
} acStreamCaptureMode;

/* cudaStreamCaptureStatus. */
typedef enum acStreamCaptureStatus {
  acStreamCaptureStatusNone = 0,        /* not capturing */
  acStreamCaptureStatusActive = 1,      /* capturing */
  acStreamCaptureStatusInvalidated = 2  /* capturing, but invalidated by an
                                           error: acStreamEndCapture will fail */
} acStreamCaptureStatus;

/* acGraphRetainUserObject flags: transfer the caller's references. */
#define acGraphUserObjectMove 0x1u
/* acUserObjectCreate flags: the destructor may run on any thread, after the
 * last replay using it has finished (required, as in CUDA). */
#define acUserObjectNoDestructorSync 0x1u

/* Host work run in stream order (cudaHostFn_t). */
typedef void (*acHostFn_t)(void* userData);
/* A kernel: host work that may touch device memory and may fail. Return
 * nonzero to report acErrorLaunchFailure on the stream. */
typedef int (*acKernelFn_t)(void* userData);

/* Event flags (cudaEvent*). */
#define acEventDefault 0x0u
#define acEventDisableTiming 0x2u
/* The event may be exported to other processes (acIpcGetEventHandle). As in
 * CUDA it must be combined with acEventDisableTiming. */
#define acEventInterprocess 0x4u

/* Stream flags (cudaStream*). There is no legacy default stream that
 * synchronizes with other streams, so NonBlocking is accepted and changes
 * nothing. */
#define acStreamDefault 0x0u
#define acStreamNonBlocking 0x1u

/* ---- errors -------------------------------------------------------------- */
ACCINTE_API const char* acGetErrorString(acError_t error);
ACCINTE_API const char* acGetErrorName(acError_t error);

/* ---- devices ------------------------------------------------------------- */
ACCINTE_API ACCINTE_NODISCARD acError_t acGetDeviceCount(int* count);
/* Sets the calling host thread's current device. */
ACCINTE_API ACCINTE_NODISCARD acError_t acSetDevice(int device);
ACCINTE_API ACCINTE_NODISCARD acError_t acGetDevice(int* device);
ACCINTE_API ACCINTE_NODISCARD acError_t acGetDeviceProperties(acDeviceProp* prop, int device);
/* Waits until every stream of the current device is idle. */
ACCINTE_API ACCINTE_NODISCARD acError_t acDeviceSynchronize(void);
/* Free and total bytes of the current device. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemGetInfo(size_t* free, size_t* total);
/* Streams run with priorities in [greatest, least] = [-1, 0]; lower is more urgent. */
ACCINTE_API ACCINTE_NODISCARD acError_t acDeviceGetStreamPriorityRange(int* leastPriority,
                                                                     int* greatestPriority);

/* ---- memory -------------------------------------------------------------- */
/* Allocates `size` bytes on the current device. acErrorMemoryAllocation when
 * the device's capacity would be exceeded. size 0 yields NULL and success. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMalloc(void** devPtr, size_t size);
/* Frees device memory; like cudaFree it first waits for the owning device's
 * streams to be idle. NULL is a no-op. */
ACCINTE_API ACCINTE_NODISCARD acError_t acFree(void* devPtr);
/* Page-locked ("pinned") host memory. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMallocHost(void** ptr, size_t size);
ACCINTE_API ACCINTE_NODISCARD acError_t acFreeHost(void* ptr);
/* Classifies any pointer, including one inside an allocation. */
ACCINTE_API ACCINTE_NODISCARD acError_t acPointerGetAttributes(acPointerAttributes* attributes,
                                                             const void* ptr);
/* Synchronous copy: first waits for every stream of each device it touches,
 * then copies on the calling thread and returns when the bytes have landed.
 * acErrorInvalidMemcpyDirection if `kind` contradicts the pointers,
 * acErrorInvalidValue if a device range runs past its allocation. count 0 is
 * a no-op. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemcpy(void* dst, const void* src, size_t count,
                                               acMemcpyKind kind);
/* Validated now, queued on `stream` (NULL: the current device's default
 * stream); returns at once. Host buffers must stay valid until it has run.
 * As CUDA's, a copy into pageable host memory (memory not from acMallocHost)
 * returns once it is done: it waits for `stream`, then copies on the calling
 * thread; it is queued like any other on a worker thread or while `stream`
 * captures. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemcpyAsync(void* dst, const void* src, size_t count,
                                                    acMemcpyKind kind, acStream_t stream);
ACCINTE_API ACCINTE_NODISCARD acError_t acMemset(void* devPtr, int value, size_t count);
ACCINTE_API ACCINTE_NODISCARD acError_t acMemsetAsync(void* devPtr, int value, size_t count,
                                                    acStream_t stream);

/* ---- virtual memory (the CUDA driver's cuMem* calls) ---------------------- */
/* Physical memory mapped into reserved address ranges, so that an allocation
 * can grow in place (the caching allocator's expandable segments). Sizes are
 * multiples of the granularity. Reservations and physical memory belong to
 * the current device; a handle is mapped whole, at one address at a time.
 * Mapped memory is device memory to kernels and copies. */
typedef unsigned long long acMemGenericAllocationHandle_t;
/* The granularity of reservations, physical memory and mappings (2 MiB). */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemGetAllocationGranularity(size_t* granularity);
/* Reserves `size` bytes of address space; nothing in it is usable until
 * mapped. Costs no device capacity. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemAddressReserve(void** ptr, size_t size);
/* Returns a whole reservation; acErrorInvalidValue while anything in it is
 * mapped. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemAddressFree(void* ptr, size_t size);
/* Creates `size` bytes of physical memory; acErrorMemoryAllocation when the
 * device's capacity would be exceeded. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemCreate(acMemGenericAllocationHandle_t* handle,
                                                  size_t size);
/* Releases a handle; its capacity returns once it is also unmapped. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemRelease(acMemGenericAllocationHandle_t handle);
/* Maps all of `handle` (size: its size) at `ptr`, in a reservation of the
 * same device where nothing is mapped yet. The memory's contents are
 * undefined. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemMap(void* ptr, size_t size,
                                               acMemGenericAllocationHandle_t handle);
/* Unmaps the handles mapped in [ptr, ptr + size), which must be whole
 * mappings side by side. As acFree, first waits for the device's streams. */
ACCINTE_API ACCINTE_NODISCARD acError_t acMemUnmap(void* ptr, size_t size);

/* ---- inter-process sharing (cudaIpc*) -------------------------------------- */
/* A handle to the device allocation containing `devPtr` (any pointer inside
 * it). Another process opens it with acIpcOpenMemHandle, which maps the same
 * memory; writes on either side are seen by the other once the writing work
 * has finished (synchronize before signalling the other process).
 * The handle stays openable while the exporter's allocation is alive (until
 * acFree or process exit): keep it alive until the importer has opened it.
 * acErrorInvalidDevicePointer for a pointer outside device memory;
 * acErrorNotSupported for an allocation made when the process had no file
 * descriptor to spare (the runtime keeps half the descriptor limit free). */
ACCINTE_API ACCINTE_NODISCARD acError_t acIpcGetMemHandle(acIpcMemHandle_t* handle,
                                                        void* devPtr);
/* Maps the memory of a handle from acIpcGetMemHandle (made by any process,
 * including this one) and returns the base of the allocation. The memory
 * stays valid until acIpcCloseMemHandle, even if the exporter frees it or
 * exits meanwhile. It belongs to the handle's device, does not count against
 * this process's capacity, and cannot be released with acFree. `flags`: 0 or
 * acIpcMemLazyEnablePeerAccess. acErrorMapBufferObjectFailed if the memory is
 * gone or the handle is not one of ours; acErrorInvalidDevice if this process
 * has no such device; acErrorIpcDescriptorsExhausted if no descriptor is
 * left to map it (each opening holds one until acIpcCloseMemHandle, within
 * the budget of half the soft RLIMIT_NOFILE: open each handle once). */
ACCINTE_API ACCINTE_NODISCARD acError_t acIpcOpenMemHandle(void** devPtr,
                                                         acIpcMemHandle_t handle,
                                                         unsigned int flags);
/* Unmaps memory from acIpcOpenMemHandle, first waiting for its device's
 * streams like acFree. acErrorInvalidDevicePointer if `devPtr` is not the
 * base of opened IPC memory. */
ACCINTE_API ACCINTE_NODISCARD acError_t acIpcCloseMemHandle(void* devPtr);
/* A handle to `event`, which must have been created with acEventInterprocess
 * (acErrorInvalidResourceHandle otherwise, and for an event opened from a
 * handle). Another process opens it with acIpcOpenEventHandle and can then
 * wait for the exporter's records of the event. The handle stays openable
 * while the exporter's event is alive (until acEventDestroy, once its pending
 * records have completed, or process exit): keep the event alive until the
 * importer has opened it. See Note [IPC events] in src/ipc_event.cpp. */
ACCINTE_API ACCINTE_NODISCARD acError_t acIpcGetEventHandle(acIpcEventHandle_t* handle,
                                                          acEvent_t event);
/* An event of this process that follows the exporter's event of `handle`
 * (made by any process, including this one); release it with
 * acEventDestroy. acStreamWaitEvent, acEventSynchronize and acEventQuery on
 * it refer to the exporter's latest record at the time of the call, as for a
 * local event; waits wake when that record completes in the exporter. It
 * cannot be recorded (acErrorNotSupported; CUDA allows it) nor re-exported
 * (acErrorInvalidResourceHandle), and has no timing. If the exporter exits
 * before the record waited for completes, the wait ends with
 * acErrorMapBufferObjectFailed (from acEventSynchronize, or asynchronously
 * from the waiting stream) instead of hanging; acEventQuery answers it too.
 * acErrorMapBufferObjectFailed if the event is gone (destroyed, exporter
 * exited) or the handle is not one of ours; acErrorInvalidValue for a NULL
 * `event`; acErrorIpcDescriptorsExhausted if the exporter's page of events
 * is not open in this process yet and no descriptor is left to open it (one
 * descriptor per exporter page with events opened here, whatever their
 * number: Note [IPC event pages]). */
ACCINTE_API ACCINTE_NODISCARD acError_t acIpcOpenEventHandle(acEvent_t* event,
                                                           acIpcEventHandle_t handle);

/* ---- streams ------------------------------------------------------------- */
/* A new stream on the current device. */
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamCreate(acStream_t* stream);
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamCreateWithPriority(acStream_t* stream,
                                                                 unsigned int flags,
                                                                 int priority);
/* Waits for the stream's queued work, then releases it. Returns a kernel
 * failure the stream had not reported yet (the stream is destroyed anyway).
 * Default streams cannot be destroyed (acErrorInvalidResourceHandle). */
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamDestroy(acStream_t stream);
/* acSuccess when idle, acErrorNotReady while a task is queued or running. */
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamQuery(acStream_t stream);
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamSynchronize(acStream_t stream);
/* Work queued on `stream` after this call waits for `event`'s latest record.
 * If that record was made in a capture and `stream` is not capturing, the
 * stream joins the capture (a fork, as in CUDA): its work is recorded into
 * the same graph, after the record, until the capture ends; the capture's
 * stream must wait for the joined stream's last work (an event recorded on
 * it) before acStreamEndCapture. A default stream, a stream of another
 * device or one capturing another graph cannot join:
 * acErrorStreamCaptureIsolation, which invalidates the capture(s). */
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamWaitEvent(acStream_t stream, acEvent_t event,
                                                        unsigned int flags);
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamGetPriority(acStream_t stream, int* priority);
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamGetDevice(acStream_t stream, int* device);
/* The default stream of `device` (what a NULL handle means on that device). */
ACCINTE_API ACCINTE_NODISCARD acError_t acDeviceGetDefaultStream(int device, acStream_t* stream);
/* Queues host work that must not touch device memory (cudaLaunchHostFunc). */
ACCINTE_API ACCINTE_NODISCARD acError_t acLaunchHostFunc(acStream_t stream, acHostFn_t fn,
                                                       void* userData);
/* Queues a kernel: host work that runs inside an access window over device
 * memory. A nonzero return is reported as acErrorLaunchFailure. */
ACCINTE_API ACCINTE_NODISCARD acError_t acLaunchKernel(acStream_t stream, acKernelFn_t fn,
                                                     void* userData);

/* ---- stream capture and graphs (cudaStreamBeginCapture, cudaGraph*) ------ */
/* Puts `stream` in capture mode: work queued on it afterwards (kernels, host
 * functions, async copies and memsets, event records and waits) is recorded
 * into a new graph instead of running. Kernels and host functions are
 * recorded with their user data pointer, which must stay valid for the
 * graph's life (see acUserObjectCreate). acErrorIllegalState if the stream is
 * already capturing; acErrorStreamCaptureUnsupported for a default stream
 * (like CUDA's legacy stream); acErrorInvalidValue for an invalid mode. */
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamBeginCapture(acStream_t stream,
                                                           acStreamCaptureMode mode);
/* Ends the capture and returns its graph; the stream, and every stream that
 * joined the capture (see acStreamWaitEvent), run work again.
 * acErrorStreamCaptureUnmatched if it was not capturing, or joined a capture
 * begun on another stream;
 * acErrorStreamCaptureUnjoined (and *graph NULL; the capture ends) if a
 * stream that joined has work that no other stream of the capture waited
 * for;
 * acErrorStreamCaptureWrongThread if another thread began a Global or
 * ThreadLocal capture (the capture goes on); acErrorStreamCaptureInvalidated
 * (and *graph NULL) if an illegal call invalidated the capture, which ends
 * anyway. */
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamEndCapture(acStream_t stream, acGraph_t* graph);
/* *status: acStreamCaptureStatusActive while capturing,
 * acStreamCaptureStatusInvalidated while capturing after an invalidation,
 * acStreamCaptureStatusNone otherwise. */
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamIsCapturing(acStream_t stream,
                                                          acStreamCaptureStatus* status);
/* The capture status, and when capturing, the capture's process-unique id
 * (nonzero) and the graph under construction (which acGraphRetainUserObject
 * and acGraphGetNodes accept; acGraphInstantiate refuses it with
 * acErrorStreamCaptureUnsupported and acGraphDestroy with
 * acErrorIllegalState until the capture ends). `id` and `graph` may be NULL. */
ACCINTE_API ACCINTE_NODISCARD acError_t acStreamGetCaptureInfo(acStream_t stream,
                                                             acStreamCaptureStatus* status,
                                                             unsigned long long* id,
                                                             acGraph_t* graph);
/* An executable graph. `flags` must be 0. The graph may be destroyed after.
 * acErrorStreamCaptureUnsupported for the graph of a capture underway. */
ACCINTE_API ACCINTE_NODISCARD acError_t acGraphInstantiate(acGraphExec_t* exec, acGraph_t graph,
                                                         unsigned long long flags);
/* Queues every recorded node on `stream` (which may differ from the captured
 * one), in capture order, as one unit. acErrorStreamCaptureUnsupported if
 * `stream` is capturing. */
ACCINTE_API ACCINTE_NODISCARD acError_t acGraphLaunch(acGraphExec_t exec, acStream_t stream);
/* Number of nodes. Only the count is available: `nodes` must be NULL. */
ACCINTE_API ACCINTE_NODISCARD acError_t acGraphGetNodes(acGraph_t graph, void* nodes,
                                                      size_t* numNodes);
/* Both return at once; launches already queued still run, and hold what they
 * need (user objects included) until they have. acGraphDestroy refuses the
 * graph of a capture underway (acErrorIllegalState): acStreamEndCapture
 * returns it. */
ACCINTE_API ACCINTE_NODISCARD acError_t acGraphDestroy(acGraph_t graph);
ACCINTE_API ACCINTE_NODISCARD acError_t acGraphExecDestroy(acGraphExec_t exec);
/* A reference-counted owner of `ptr`: `destroy(ptr)` runs when the last
 * reference goes. `flags` must be acUserObjectNoDestructorSync. */
ACCINTE_API ACCINTE_NODISCARD acError_t acUserObjectCreate(acUserObject_t* object, void* ptr,
                                                         acHostFn_t destroy,
                                                         unsigned int initialRefcount,
                                                         unsigned int flags);
ACCINTE_API ACCINTE_NODISCARD acError_t acUserObjectRelease(acUserObject_t object,
                                                          unsigned int count);
/* The graph (and each executable made from it) holds `count` references
 * until destroyed and no launch of it is pending. With acGraphUserObjectMove
 * the caller's references are transferred instead of added. */
ACCINTE_API ACCINTE_NODISCARD acError_t acGraphRetainUserObject(acGraph_t graph,
                                                              acUserObject_t object,
                                                              unsigned int count,
                                                              unsigned int flags);

/* The number of stream captures begun and not yet ended in the process (no
 * CUDA counterpart). 0 means no stream is capturing, so a caller on a hot
 * path (every kernel launch) may skip acStreamGetCaptureInfo; nonzero means
 * ask. One atomic load; never fails, also in a forked child. */
ACCINTE_API unsigned int acCapturesUnderway(void);

/* ---- events -------------------------------------------------------------- */
ACCINTE_API ACCINTE_NODISCARD acError_t acEventCreate(acEvent_t* event);
/* `flags`: acEventDefault, or acEventDisableTiming optionally with
 * acEventInterprocess (acErrorInvalidValue for Interprocess alone or an
 * unknown flag). An interprocess event takes a slot of a shared page, many
 * events to a page and one descriptor per page (Note [IPC event pages]):
 * acErrorIpcDescriptorsExhausted when every slot is taken and the
 * descriptor budget allows no further page. */
ACCINTE_API ACCINTE_NODISCARD acError_t acEventCreateWithFlags(acEvent_t* event,
                                                             unsigned int flags);
/* Returns at once; records still pending complete (and, for an interprocess
 * event, stay visible to importers) as if the event were alive. */
ACCINTE_API ACCINTE_NODISCARD acError_t acEventDestroy(acEvent_t event);
/* Captures the work queued on `stream` so far; completes when it finishes.
 * As in CUDA, the stream must belong to the device that was current when the
 * event was created (acErrorInvalidResourceHandle otherwise). An
 * interprocess event cannot be recorded on a capturing stream
 * (acErrorStreamCaptureUnsupported, which invalidates the capture), and an
 * event opened from an IPC handle cannot be recorded (acErrorNotSupported). */
ACCINTE_API ACCINTE_NODISCARD acError_t acEventRecord(acEvent_t event, acStream_t stream);
/* acSuccess when the latest record completed (or none was made). */
ACCINTE_API ACCINTE_NODISCARD acError_t acEventQuery(acEvent_t event);
ACCINTE_API ACCINTE_NODISCARD acError_t acEventSynchronize(acEvent_t event);
/* Milliseconds between two completed records made with timing enabled.
 * acErrorNotReady if either record has not completed;
 * acErrorInvalidResourceHandle if either event was never recorded or was
 * created with acEventDisableTiming (as CUDA answers). */
ACCINTE_API ACCINTE_NODISCARD acError_t acEventElapsedTime(float* ms, acEvent_t start,
                                                         acEvent_t end);

/* ---- activity records (CUPTI's activity API) ------------------------------ */
/* Note [accinte activity records]
 * A profiler enables the kinds it wants; the runtime then stamps one record
 * per operation of those kinds, in CLOCK_REALTIME nanoseconds (the clock of
 * PyTorch's c10::getTime and of Kineto), and keeps it until read:
 *   KERNEL / MEMCPY / MEMSET  on the thread that runs the work for the
 *                             stream (its worker, or a waiting host thread),
 *                             around the work itself
 *                             (so a graph replay is recorded too); copies are
 *                             one record each, also when the copy engines
 *                             split them, with their byte count and
 *                             direction; the synchronous acMemcpy / acMemset
 *                             are recorded on the calling thread (stream NULL)
 *   RUNTIME                   on the calling thread, around acLaunchKernel*,
 *                             acLaunchHostFunc, acMemcpy*, acMemset*
 *   SYNCHRONIZATION           around acStreamSynchronize, acEventSynchronize,
 *                             acDeviceSynchronize
 *   EXTERNAL_CORRELATION      once per RUNTIME record made while the calling
 *                             thread's external id stack is not empty: links
 *                             the call's correlation id to the top external
 *                             id (a profiler's operator id)
 * A runtime call and the device work it queued share one correlation id
 * (nonzero, process-unique). With every kind disabled, a launch or copy costs
 * one relaxed atomic load on the calling thread and one on the worker. */
typedef enum acActivityKind {
  acActivityKindKernel = 1,
  acActivityKindMemcpy = 2,
  acActivityKindMemset = 3,
  acActivityKindRuntime = 4,
  acActivityKindSynchronization = 5,
  acActivityKindExternalCorrelation = 6
} acActivityKind;

/* One record. Fields that do not apply to a kind are 0 (device -1). */
// LITERALINCLUDE START: PROFILER ACTIVITY RECORD
typedef struct acActivityRecord {
  acActivityKind kind;
  int device;             /* KERNEL, MEMCPY, MEMSET: the device; else -1 */
  acStream_t stream;      /* the stream the work ran on; NULL for host
                             records and synchronous copies */
  uint64_t start;         /* CLOCK_REALTIME ns */
  uint64_t end;
  uint64_t correlationId; /* shared by a runtime call and its device work */
  uint64_t externalId;    /* EXTERNAL_CORRELATION only */
  uint64_t bytes;         /* MEMCPY, MEMSET */
  acMemcpyKind copyKind;  /* MEMCPY: the direction (never acMemcpyDefault) */
  uint32_t threadId;      /* RUNTIME, SYNCHRONIZATION: the host thread (tid) */
  const char* name;       /* KERNEL: the name given at launch ("kernel"
                             without one); RUNTIME, SYNCHRONIZATION: the C
                             call's name. Valid for the process's life. */
} acActivityRecord;
// LITERALINCLUDE END: PROFILER ACTIVITY RECORD

/* Starts / stops recording `kind` (any kind but EXTERNAL_CORRELATION, which
 * follows RUNTIME). Work already running when its kind is disabled is not
 * recorded. acErrorInvalidValue for an unknown kind. */
ACCINTE_API ACCINTE_NODISCARD acError_t acActivityEnable(acActivityKind kind);
ACCINTE_API ACCINTE_NODISCARD acError_t acActivityDisable(acActivityKind kind);
/* Pushes / pops an external id on the calling thread's stack
 * (cuptiActivityPushExternalCorrelationId). Popping an empty stack:
 * acErrorInvalidValue. `id` may be NULL. */
ACCINTE_API ACCINTE_NODISCARD acError_t acActivityPushExternalCorrelationId(uint64_t id);
ACCINTE_API ACCINTE_NODISCARD acError_t acActivityPopExternalCorrelationId(uint64_t* id);
/* Waits until work that began while its kind was enabled has stored its
 * record (cuptiActivityFlushAll). Must not be called from a kernel or host
 * function (acErrorNotSupported). */
ACCINTE_API ACCINTE_NODISCARD acError_t acActivityFlushAll(void);
/* Moves up to `capacity` of the stored records, oldest first, into `records`
 * and sets *count to how many; the rest stay for the next call. */
ACCINTE_API ACCINTE_NODISCARD acError_t acActivityGetRecords(acActivityRecord* records,
                                                           size_t capacity, size_t* count);
/* Drops every stored record. */
ACCINTE_API ACCINTE_NODISCARD acError_t acActivityClear(void);
/* Now, in the records' clock (CLOCK_REALTIME ns). */
ACCINTE_API ACCINTE_NODISCARD acError_t acActivityGetTimestamp(uint64_t* timestamp);
/* acLaunchKernel with a name for the kernel's records (an operator name,
 * a generated kernel's, a collective's). The name is read when the kernel
 * runs with KERNEL records enabled (and copied then): it must stay valid
 * until the kernel's last run, replays of a captured graph included. NULL
 * means "kernel". */
ACCINTE_API ACCINTE_NODISCARD acError_t acLaunchKernelNamed(acStream_t stream, acKernelFn_t fn,
                                                          void* userData, const char* name);

/* ---- strict mode ----------------------------------------------------------- */
/* 1 when ACCINTE_STRICT=1 was set at first use of the runtime. */
ACCINTE_API int acIsStrict(void);

#ifdef __cplusplus
}
#endif

#endif /* ACCINTE_ACCINTE_H_ */
