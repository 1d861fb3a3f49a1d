#pragma once
// AccInteGraph: capture and replay of the work queued on an accinte stream
// (torch.accelerator.Graph, torch.accinte.graph). The at::GraphImplInterface
// of this backend, registered with REGISTER_GRAPH_IMPL. Modelled on
// ATen/cuda/CUDAGraph.
//
// Note [accinte graphs]
// ~~~~~~~~~~~~~~~~~~~~~
// capture_begin puts the current stream in capture mode (acStreamBeginCapture):
// from then on, every kernel launched on it is recorded by the runtime with
// the closure it was given (launch_kernel makes the closure a user object of
// the graph, so it lives as long as the graph), not run. capture_end returns
// the graph and instantiates it; replay launches it (acGraphLaunch), which
// runs every recorded kernel again, in order, on the memory it was given.
// Three things make a replay mean what the capture meant:
//   - memory: allocations on the capturing stream come from the graph's
//     private pool, reserved for the graph's life (Note [accinte graph
//     memory] in AccInteCachingAllocatorPrivatePools.cpp);
//   - random numbers: each replay draws fresh ones (Note [accinte graph-safe
//     random numbers] in AccInteGenerator.h);
//   - nothing may wait for captured work, which has not run: the runtime
//     refuses such calls and invalidates the capture, and the calls that know
//     what they are (`.item()`, copies to host memory, operators whose output
//     shape depends on data) say so first (check_not_capturing).
// A capture may fork into other streams of its device and join them back,
// as on CUDA: a stream that waits for work of the capture (s2.wait_stream(s1))
// captures into the same graph until capture_end, and must be waited for by
// the capturing stream before it; replays run the work of every stream in
// the order it was issued, on the replay stream.
// What the caching allocators do during a capture (frees with record_stream,
// out of memory, empty_cache, pinned copies): Note [accinte graph memory]
// (AccInteCachingAllocatorPrivatePools.cpp) and the host allocator's record_stream
// (AccInteHostAllocator.cpp).

#include <ATen/core/GraphImplInterface.h>
#include <ATen/core/Generator.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteStream.h>

#include <c10/core/Storage.h>
#include <c10/util/flat_hash_map.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace c10::accinte {

class AccInteGraph final : public at::GraphImplInterface {
 public:
  explicit AccInteGraph(const at::GraphImplArgs& args);
  /// Resets; failures become warnings.
  ~AccInteGraph() override;

  /// Begins capturing the current stream, which must not be a default stream
  /// nor capturing already. Allocations on it come from pool `pool` ({0, 0}:
  /// a new pool of this graph's; else a pool shared with the graph that made
  /// it or a graph_pool_handle). `mode` Default means Global. Throws if this
  /// graph is capturing or holds a capture.
  void capture_begin(MempoolId_t pool = {0, 0},
                     at::GraphCaptureMode mode = at::GraphCaptureMode::Default) override;
  /// Ends the capture, on the stream it began on, and instantiates the graph
  /// unless keep_graph. Throws (and releases everything) if the capture was
  /// invalidated, naming the call that invalidated it when known.
  void capture_end() override;
  /// Makes the executable graph; with keep_graph, again after each call.
  void instantiate() override;
  /// Queues the captured work on the current stream of the capture's device.
  void replay() override;
  /// Drops the graph and releases its memory pool; the instance may capture
  /// again afterwards. Mid-capture, ends the capture first, which only the
  /// capturing thread may do (unless the mode is Relaxed): from another
  /// thread, throws and changes nothing.
  void reset() override;
  /// The memory pool id, to share with another capture. Throws before a
  /// successful capture.
  MempoolId_t pool() const override;
  /// Keeps what debug_dump needs after capture_end.
  void enable_debug_mode() override;
  /// Writes a Graphviz (dot) listing of the captured kernels, by operator
  /// name, in replay order. Warns and writes nothing unless debug mode or
  /// keep_graph is on.
  void debug_dump(const std::string& path) override;

 private:
  friend void note_captured_kernel(CaptureId_t, const char*);
  friend void note_captured_storage(const c10::Storage&);
  friend void note_capture_invalidated(const AccInteStream&, const char*);
  friend bool note_random_engine(CaptureId_t, c10::intrusive_ptr<AccInteGeneratorImpl>,
                                 at::Generator);

  struct RandomEngines {
    c10::intrusive_ptr<AccInteGeneratorImpl> generator;
    std::vector<at::Generator> engines; // engine k is the capture's k-th draw
  };

  void unregister_capture();
  void end_capture_state();
  void abandon_capture();

  const bool keep_graph_;
  bool debug_ = false;
  std::optional<AccInteStream> capture_stream_;
  DeviceIndex device_ = -1;
  // Read by the allocation filter from any thread.
  std::atomic<CaptureId_t> capture_id_{0};
  MempoolId_t mempool_id_{0, 0};
  bool capturing_ = false;     // between capture_begin and capture_end
  bool capture_ended_ = false; // a successful capture is held
  acGraph_t graph_ = nullptr;
  acGraphExec_t exec_ = nullptr;
  // Filled while capturing by the note_* functions, under the registry lock.
  std::vector<std::string> kernel_names_;
  std::vector<RandomEngines> random_;
  std::string invalidated_by_;
  // Storages from outside the graph's pool that captured kernels use, kept
  // alive for the graph's life (Note [accinte graph argument lifetime]).
  ska::flat_hash_map<const c10::StorageImpl*, c10::Storage> kept_storages_;
};

} // namespace c10::accinte
