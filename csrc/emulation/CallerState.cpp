// Note [accinte kernels see their caller's state]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A CPU kernel run for an accinte call runs later, on the stream's worker
// thread, but it must behave as it would on the thread that called it, as
// at::launch and the autograd engine make work on other threads do
// (at::ThreadLocalState). The kernel can observe:
//
//   - the autograd modes: under torch.inference_mode() the tensors created
//     at the call (outputs and their CPU aliases) are inference tensors, and
//     a kernel writing one outside inference mode fails ("Inplace update to
//     inference tensor outside InferenceMode"); grad mode is read by kernels
//     that build differentiable intermediates;
//   - the excluded dispatch keys: whether autocast is on for each device (a
//     key stays excluded while it is off), and what the caller turned off;
//   - the autocast dtypes and cache flag, which the CPU's autocast kernels
//     read for the nested calls a kernel makes while CPU autocast is on;
//   - the intra-op thread count (torch.set_num_threads), which OpenMP keeps
//     per thread;
//   - the MXCSR flush-to-zero and denormals-are-zero flags
//     (torch.set_flush_denormal), which the FPU keeps per thread.
//
// A host thread that waits for the stream may run the kernel itself (Note
// [accinte a waiting host runs the queue]): the guard gives it the caller's
// state for the kernel and its own back afterwards, thread count included.
// Such a thread may also be inside what a worker never is: a dispatch mode
// (FakeTensorMode, a logging mode), a torch function mode, a profiler
// recording this thread, torch.synchronize() called under any of them. The
// kernel's own CPU operators must not reach those (under FakeTensorMode
// they crashed the process): WorkerStateGuard first gives the thread the
// state of a fresh thread, as the worker's is.
//
// Deterministic algorithms and the default dtype are process-wide
// (at::globalContext(), c10::get_default_dtype()): one copy, which cannot be
// given to one thread. CPU kernels read them when they run, so their Python
// setters wait for the queued kernels instead (Note [accinte kernels and
// process-wide settings], torch_accinte/accinte/_process_settings.py). The included
// dispatch keys are not carried: they serve what runs above the backend
// (Python modes, functorch transforms, functionalization, pre-dispatch
// tracing), whose state (mode stacks, transform levels) belongs to the
// calling thread; the CPU kernel runs below all of them, on plain host
// tensors, as it does inside a CUDA kernel's place.
#include <csrc/emulation/CallerState.h>

#include <ATen/Parallel.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/PythonDispatcherTLS.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <thread>

#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#define ACCINTE_HAS_MXCSR 1
#endif

namespace at::native::accinte {
namespace {

#ifdef ACCINTE_HAS_MXCSR
constexpr unsigned int kDenormalBits = 0x8040; // MXCSR flush-to-zero | denormals-are-zero
#endif

unsigned int denormal_flags() {
#ifdef ACCINTE_HAS_MXCSR
  return _mm_getcsr() & kDenormalBits;
#else
  return 0;
#endif
}

void set_dispatch_keys(c10::DispatchKeySet included, c10::DispatchKeySet excluded) {
  c10::impl::PODLocalDispatchKeySet keys{};
  keys.set_included(included);
  keys.set_excluded(excluded);
  c10::impl::_force_tls_local_dispatch_key_set(keys);
}

void set_denormal_flags(unsigned int flags) {
#ifdef ACCINTE_HAS_MXCSR
  const unsigned int csr = _mm_getcsr();
  if ((csr & kDenormalBits) != flags) {
    _mm_setcsr((csr & ~kDenormalBits) | flags);
  }
#else
  (void)flags;
#endif
}

} // namespace

// LITERALINCLUDE START: CALLER STATE CAPTURE
CallerState CallerState::capture() {
  CallerState state;
  state.autograd_ = c10::AutogradState::get_tls_state();
  state.excluded_ = c10::impl::tls_local_dispatch_key_set().excluded_;
  state.autocast_cpu_dtype_ = at::autocast::get_autocast_dtype(c10::DeviceType::CPU);
  state.autocast_device_dtype_ = at::autocast::get_autocast_dtype(c10::DeviceType::PrivateUse1);
  state.autocast_cache_ = at::autocast::is_autocast_cache_enabled();
  state.num_threads_ = at::get_num_threads();
  state.denormal_flags_ = denormal_flags();
  return state;
}
// LITERALINCLUDE END: CALLER STATE CAPTURE

namespace {

// The parts of a CallerState a guard may replace.
enum Part : unsigned {
  kAutograd = 1U << 0,
  kKeys = 1U << 1,
  kCpuDtype = 1U << 2,
  kDeviceDtype = 1U << 3,
  kCache = 1U << 4,
  kDenormal = 1U << 5,
  kThreads = 1U << 6,
};

bool same_autograd_state(const c10::AutogradState& a, const c10::AutogradState& b) {
  return a.get_grad_mode() == b.get_grad_mode() &&
         a.get_inference_mode() == b.get_inference_mode() &&
         a.get_fw_grad_mode() == b.get_fw_grad_mode() &&
         a.get_multithreading_enabled() == b.get_multithreading_enabled() &&
         a.get_view_replay_enabled() == b.get_view_replay_enabled() &&
         a.get_grad_layout_enforcement_enabled() == b.get_grad_layout_enforcement_enabled() &&
         !a.get_graph_exec_group().has_value() && !b.get_graph_exec_group().has_value();
}

} // namespace

CallerStateGuard::CallerStateGuard(const CallerState& caller) {
  const c10::AutogradState& autograd = c10::AutogradState::get_tls_state();
  if (!same_autograd_state(autograd, caller.autograd_)) {
    own_.autograd_ = autograd;
    c10::AutogradState::set_tls_state(caller.autograd_);
    replaced_ |= kAutograd;
  }
  const c10::impl::LocalDispatchKeySet keys = c10::impl::tls_local_dispatch_key_set();
  const c10::DispatchKeySet excluded =
      caller.excluded_ | c10::autograd_dispatch_keyset_with_ADInplaceOrView;
  if (keys.excluded_ != excluded) {
    own_.excluded_ = keys.excluded_;
    own_included_ = keys.included_;
    set_dispatch_keys(keys.included_, excluded);
    replaced_ |= kKeys;
  }
  const c10::ScalarType cpu_dtype = at::autocast::get_autocast_dtype(c10::DeviceType::CPU);
  if (cpu_dtype != caller.autocast_cpu_dtype_) {
    own_.autocast_cpu_dtype_ = cpu_dtype;
    at::autocast::set_autocast_dtype(c10::DeviceType::CPU, caller.autocast_cpu_dtype_);
    replaced_ |= kCpuDtype;
  }
  const c10::ScalarType device_dtype =
      at::autocast::get_autocast_dtype(c10::DeviceType::PrivateUse1);
  if (device_dtype != caller.autocast_device_dtype_) {
    own_.autocast_device_dtype_ = device_dtype;
    at::autocast::set_autocast_dtype(c10::DeviceType::PrivateUse1,
                                     caller.autocast_device_dtype_);
    replaced_ |= kDeviceDtype;
  }
  const bool cache = at::autocast::is_autocast_cache_enabled();
  if (cache != caller.autocast_cache_) {
    own_.autocast_cache_ = cache;
    at::autocast::set_autocast_cache_enabled(caller.autocast_cache_);
    replaced_ |= kCache;
  }
  const int threads = at::get_num_threads();
  if (threads != caller.num_threads_) {
    own_.num_threads_ = threads;
    at::set_num_threads(caller.num_threads_);
    replaced_ |= kThreads;
  }
  const unsigned int flags = denormal_flags();
  if (flags != caller.denormal_flags_) {
    own_.denormal_flags_ = flags;
    set_denormal_flags(caller.denormal_flags_);
    replaced_ |= kDenormal;
  }
}

CallerStateGuard::~CallerStateGuard() {
  if (replaced_ == 0) {
    return;
  }
  if ((replaced_ & kAutograd) != 0) {
    c10::AutogradState::set_tls_state(own_.autograd_);
  }
  if ((replaced_ & kKeys) != 0) {
    set_dispatch_keys(own_included_, own_.excluded_);
  }
  if ((replaced_ & kCpuDtype) != 0) {
    at::autocast::set_autocast_dtype(c10::DeviceType::CPU, own_.autocast_cpu_dtype_);
  }
  if ((replaced_ & kDeviceDtype) != 0) {
    at::autocast::set_autocast_dtype(c10::DeviceType::PrivateUse1,
                                     own_.autocast_device_dtype_);
  }
  if ((replaced_ & kCache) != 0) {
    at::autocast::set_autocast_cache_enabled(own_.autocast_cache_);
  }
  if ((replaced_ & kThreads) != 0) {
    at::set_num_threads(own_.num_threads_);
  }
  if ((replaced_ & kDenormal) != 0) {
    set_denormal_flags(own_.denormal_flags_);
  }
}

namespace {

// Whether the calling thread has state above the backend that a worker
// never has (see WorkerStateGuard). Thread-local reads only.
bool above_the_backend() {
  // Every thread includes BackendSelect and ADInplaceOrView by default.
  return !(c10::impl::tls_local_dispatch_key_set().included_ - c10::default_included_set).empty() ||
      c10::impl::TorchDispatchModeTLS::stack_len() > 0 ||
      at::impl::PythonTorchFunctionTLS::stack_len() > 0 ||
      c10::impl::PythonDispatcherTLS::get_state() != nullptr || at::hasThreadLocalCallbacks();
}

// The thread-local state of a thread that never ran anything: a worker's.
const at::ThreadLocalState& fresh_thread_state() {
  static const at::ThreadLocalState* const state = [] {
    const at::ThreadLocalState* captured = nullptr;
    std::thread([&] { captured = new at::ThreadLocalState(); }).join();
    return captured; // never freed: kernels may run until the process exits
  }();
  return *state;
}

} // namespace

WorkerStateGuard::WorkerStateGuard() {
  if (above_the_backend()) {
    worker_state_.emplace(fresh_thread_state());
  }
}

} // namespace at::native::accinte
