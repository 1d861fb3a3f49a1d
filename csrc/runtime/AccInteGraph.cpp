#include <csrc/runtime/AccInteGraph.h>

#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGenerator.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>

#include <c10/util/flat_hash_map.h>

#include <fstream>
#include <mutex>

namespace c10::accinte {
namespace {

// Graphs between capture_begin and capture_end, by capture id. A capture can
// be fed from several threads (autograd runs backward on a device thread of
// its own, on the forward's stream), so this is a global map, not a
// thread-local stack, as in CUDAGraph.cpp. The pointers are valid while the
// entry exists: a graph removes itself in capture_end and reset.
std::mutex g_capturing_mutex;
ska::flat_hash_map<CaptureId_t, AccInteGraph*> g_capturing; // guarded by g_capturing_mutex

// Ids of pools made by capture_begin are {n, 0}; torch.accinte.graph_pool_handle
// makes {0, n}, so the two never collide (the CUDA convention).
std::atomic<CaptureId_t> g_next_pool_id{1};

acStreamCaptureMode to_runtime_mode(at::GraphCaptureMode mode) {
  switch (mode) {
    case at::GraphCaptureMode::ThreadLocal:
      return acStreamCaptureModeThreadLocal;
    case at::GraphCaptureMode::Relaxed:
      return acStreamCaptureModeRelaxed;
    case at::GraphCaptureMode::Default: // the most conservative, as CUDA's default
    case at::GraphCaptureMode::Global:
      break;
  }
  return acStreamCaptureModeGlobal;
}

std::string pool_str(MempoolId_t id) {
  return c10::str("(", id.first, ", ", id.second, ")");
}

} // namespace

void note_capture_invalidated(const AccInteStream& stream, const char* what) {
  const CaptureId_t id = current_capture_id(stream);
  std::lock_guard<std::mutex> lock(g_capturing_mutex);
  if (auto it = g_capturing.find(id); it != g_capturing.end() &&
                                      it->second->invalidated_by_.empty()) {
    it->second->invalidated_by_ = what;
  }
}

// Note [accinte graph argument lifetime]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A captured kernel holds raw pointers to the memory it was given. Memory
// the capture allocated comes from the graph's private pool, which lives as
// long as the graph; but a capture may also use tensors allocated before it
// began (static inputs, parameters). CUDA leaves their lifetime to the user:
// delete such a tensor, empty the cache and replay, and the replay reads
// freed memory. accinte keeps them alive instead: every storage a captured
// kernel reads or writes passes through note_captured_storage (from
// cpu_alias and the copies), and the graph holds a reference to each one not
// allocated from its own pool until reset() or its destruction. The cost is
// one hash-set insertion per argument per captured launch, during capture
// only. A storage shrunk after capture (untyped_storage().resize_) swaps its
// memory, which the graph cannot hold: resizing a captured input is the
// user's error, as on CUDA.
void note_captured_storage(const c10::Storage& storage) {
  if (C10_LIKELY(!captures_underway()) || storage.data() == nullptr) {
    return;
  }
  const CaptureId_t id = current_capture_id(getCurrentAccInteStream(storage.device().index()));
  if (id == 0) {
    return;
  }
  std::lock_guard<std::mutex> lock(g_capturing_mutex);
  const auto it = g_capturing.find(id);
  if (it == g_capturing.end()) {
    return;
  }
  AccInteGraph& graph = *it->second;
  const c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  if (graph.kept_storages_.count(impl) == 0 &&
      !allocated_in_pool(storage.data(), graph.mempool_id_)) {
    graph.kept_storages_.emplace(impl, storage);
  }
}

void note_captured_kernel(CaptureId_t id, const char* name) {
  std::lock_guard<std::mutex> lock(g_capturing_mutex);
  if (auto it = g_capturing.find(id); it != g_capturing.end()) {
    it->second->kernel_names_.emplace_back(name);
  }
}

bool note_random_engine(CaptureId_t id, c10::intrusive_ptr<AccInteGeneratorImpl> generator,
                        at::Generator engine) {
  std::lock_guard<std::mutex> lock(g_capturing_mutex);
  const auto it = g_capturing.find(id);
  if (it == g_capturing.end()) {
    return false;
  }
  auto& random = it->second->random_;
  auto entry = std::find_if(random.begin(), random.end(),
                            [&](const auto& r) { return r.generator == generator; });
  if (entry == random.end()) {
    random.push_back({std::move(generator), {}});
    entry = std::prev(random.end());
  }
  entry->engines.push_back(std::move(engine));
  return true;
}

AccInteGraph::AccInteGraph(const at::GraphImplArgs& args) : keep_graph_(args.keep_graph) {}

AccInteGraph::~AccInteGraph() {
  try {
    reset();
  } catch (const std::exception& e) {
    TORCH_WARN("accinte: destroying a graph failed: ", e.what());
    abandon_capture();
  }
}

// For a graph destroyed by a thread that may not end its capture: nothing
// may refer to `this` afterwards. The runtime capture stays on the stream
// until its thread ends it (acStreamEndCapture); the memory it used stays
// reserved, since the recorded work may still point into it.
void AccInteGraph::abandon_capture() {
  if (capturing_) {
    unregister_capture();
    end_allocate_to_pool(device_, mempool_id_);
    capturing_ = false;
  }
}

// LITERALINCLUDE START: GRAPH CAPTURE BEGIN
void AccInteGraph::capture_begin(MempoolId_t pool, at::GraphCaptureMode mode) {
  TORCH_CHECK(!capturing_, "capture_begin(): this graph is already capturing; call "
              "capture_end() first");
  TORCH_CHECK(!capture_ended_, "capture_begin(): this graph already holds a capture; call "
              "reset() before capturing again, or use another graph");
  const AccInteStream stream = getCurrentAccInteStream();
  TORCH_CHECK(stream != getDefaultAccInteStream(stream.device_index()),
              "accinte graphs must be captured on a non-default stream, as CUDA graphs must: "
              "capture inside `with torch.accinte.stream(torch.accinte.Stream()):` "
              "(torch.accinte.graph does it for you). Replays may use any stream.");
  TORCH_CHECK(!is_stream_capturing(stream), "capture_begin(): the current stream ", stream,
              " is already capturing another graph; end that capture first");
  TORCH_CHECK(pool.first == 0 || pool.second == 0, "capture_begin(): invalid pool id ",
              pool_str(pool), ": use another graph's pool() or graph_pool_handle()");
  device_ = stream.device_index();
  mempool_id_ = pool.first != 0 || pool.second != 0
      ? pool
      : MempoolId_t{g_next_pool_id.fetch_add(1), 0};
  // Before the capture begins, so that no allocation of the capture misses
  // the pool; the filter matches nothing until capture_id_ is set.
  begin_allocate_to_pool(device_, mempool_id_, [this](const AccInteStream& s) {
    const CaptureId_t mine = capture_id_.load();
    return mine != 0 && s.device_index() == device_ && current_capture_id(s) == mine;
  });
  const acError_t began = acStreamBeginCapture(stream.stream(), to_runtime_mode(mode));
  if (began != acSuccess) {
    end_allocate_to_pool(device_, mempool_id_);
    release_pool(device_, mempool_id_);
    ACCINTE_CHECK(began);
  }
  const CaptureId_t id = current_capture_id(stream);
  {
    std::lock_guard<std::mutex> lock(g_capturing_mutex);
    g_capturing.emplace(id, this);
  }
  capture_id_.store(id);
  capture_stream_ = stream;
  capturing_ = true;
}
// LITERALINCLUDE END: GRAPH CAPTURE BEGIN

void AccInteGraph::unregister_capture() {
  std::lock_guard<std::mutex> lock(g_capturing_mutex);
  g_capturing.erase(capture_id_.load());
}

// Leaves the capturing state after capture_end, successful or not.
void AccInteGraph::end_capture_state() {
  unregister_capture();
  end_allocate_to_pool(device_, mempool_id_);
  capturing_ = false;
}

// LITERALINCLUDE START: GRAPH CAPTURE END
void AccInteGraph::capture_end() {
  TORCH_CHECK(capturing_, "capture_end() was called without a matching capture_begin()");
  const AccInteStream stream = getCurrentAccInteStream(device_);
  TORCH_CHECK(stream == *capture_stream_, "capture_end() must be called on the stream the "
              "capture began on (", *capture_stream_, "), but the current stream is ", stream);
  acGraph_t graph = nullptr;
  const acError_t ended = acStreamEndCapture(stream.stream(), &graph);
  if (ended == acErrorStreamCaptureWrongThread) {
    ACCINTE_CHECK(ended); // the capture goes on; its own thread can still end it
  }
  end_capture_state();
  if (ended != acSuccess) {
    const std::string cause = invalidated_by_.empty()
        ? std::string("a call that waits for or queries the capturing stream (a synchronize, "
                      "an event query, a copy to host memory...)")
        : invalidated_by_;
    release_pool(device_, mempool_id_);
    kernel_names_.clear();
    random_.clear();
    invalidated_by_.clear();
    kept_storages_.clear();
    TORCH_CHECK(ended != acErrorStreamCaptureInvalidated, "accinte graph capture failed: it "
                "was invalidated by ", cause, " during capture, and synchronization is not "
                "allowed while capturing. Nothing was captured; the device is usable.");
    TORCH_CHECK(ended != acErrorStreamCaptureUnjoined, "accinte graph capture failed: a stream "
                "that joined the capture (it waited for work of the capture, e.g. "
                "s2.wait_stream(s1)) still had work that ", stream, " did not wait for. Join "
                "every such stream back (", stream, ".wait_stream(s2)) before capture_end(). "
                "Nothing was captured; the device is usable.");
    ACCINTE_CHECK(ended);
  }
  graph_ = graph;
  capture_ended_ = true;
  if (kernel_names_.empty()) {
    TORCH_WARN("The accinte graph is empty: nothing was launched on ", stream,
               " during capture. Was the work queued on another stream or device?");
  }
  if (!keep_graph_) {
    instantiate();
    if (!debug_) {
      ACCINTE_CHECK(acGraphDestroy(graph_));
      graph_ = nullptr;
    }
  }
}
// LITERALINCLUDE END: GRAPH CAPTURE END

void AccInteGraph::instantiate() {
  TORCH_CHECK(capture_ended_, "instantiate() needs a successful capture first");
  if (exec_ != nullptr) {
    TORCH_CHECK(keep_graph_, "instantiate() is for graphs made with keep_graph=True; this "
                "one was instantiated by capture_end()");
    ACCINTE_CHECK(acGraphExecDestroy(exec_));
    exec_ = nullptr;
  }
  TORCH_CHECK(graph_ != nullptr, "instantiate(): the captured graph was already released");
  ACCINTE_CHECK(acGraphInstantiate(&exec_, graph_, 0));
}

// LITERALINCLUDE START: GRAPH REPLAY
void AccInteGraph::replay() {
  TORCH_CHECK(capture_ended_, "replay() was called without a preceding successful capture: "
              "capture work first (`with graph:`, or capture_begin() and capture_end())");
  if (exec_ == nullptr) {
    instantiate(); // keep_graph=True: instantiated on first replay
  }
  AccInteGuard guard(device_);
  const AccInteStream stream = getCurrentAccInteStream(device_);
  TORCH_CHECK(!is_stream_capturing(stream), "replay(): the current stream ", stream,
              " is capturing; accinte graphs cannot be replayed into another capture");
  // Fresh random numbers for this replay, seeded in stream order ahead of the
  // graph: see Note [accinte graph-safe random numbers].
  for (const RandomEngines& r : random_) {
    const auto [seed, base] = r.generator->reserve_offsets(r.engines.size());
    launch_kernel(stream, [engines = r.engines, seed = seed, base = base]() mutable {
      for (size_t k = 0; k < engines.size(); ++k) {
        std::lock_guard<std::mutex> lock(engines[k].mutex());
        engines[k].set_current_seed(AccInteGeneratorImpl::engine_seed(seed, base + k));
      }
    }, "graph RNG seeds");
  }
  acError_t launched = acSuccess;
  {
    HostWaitGuard no_gil; // a full queue waits: Note [accinte launch queue depth]
    launched = acGraphLaunch(exec_, stream.stream());
  }
  ACCINTE_CHECK(launched);
  maybe_block_after_launch(stream);
}
// LITERALINCLUDE END: GRAPH REPLAY

void AccInteGraph::reset() {
  if (capturing_) {
    // Reset mid-capture (or after a capture_end that threw): end the capture
    // and drop whatever it recorded.
    acGraph_t graph = nullptr;
    const acError_t ended = acStreamEndCapture(capture_stream_->stream(), &graph);
    // Another thread's capture goes on: leave every piece of it in place, so
    // that its own thread can still end it.
    TORCH_CHECK(ended != acErrorStreamCaptureWrongThread, "reset(): this graph is capturing ",
                *capture_stream_, " and only the thread that began the capture can end it "
                "(capture_error_mode=\"relaxed\" lifts this); call reset() or capture_end() "
                "from that thread");
    if (ended == acSuccess) {
      ACCINTE_CHECK_WARN(acGraphDestroy(graph));
    }
    end_capture_state();
    release_pool(device_, mempool_id_);
  }
  if (capture_ended_) {
    release_pool(device_, mempool_id_);
    capture_ended_ = false;
  }
  if (exec_ != nullptr) {
    ACCINTE_CHECK_WARN(acGraphExecDestroy(exec_));
    exec_ = nullptr;
  }
  if (graph_ != nullptr) {
    ACCINTE_CHECK_WARN(acGraphDestroy(graph_));
    graph_ = nullptr;
  }
  capture_id_.store(0);
  kernel_names_.clear();
  random_.clear();
  invalidated_by_.clear();
  // After the executable graph is gone: nothing can replay over them now.
  kept_storages_.clear();
}

MempoolId_t AccInteGraph::pool() const {
  TORCH_CHECK(capture_ended_, "pool() was called without a preceding successful capture");
  return mempool_id_;
}

void AccInteGraph::enable_debug_mode() {
  debug_ = true;
}

void AccInteGraph::debug_dump(const std::string& path) {
  if (!debug_ && !keep_graph_) {
    TORCH_WARN("accinte graph debug mode is off: call enable_debug_mode() before capturing "
               "to use debug_dump()");
    return;
  }
  TORCH_CHECK(capture_ended_, "debug_dump() needs a successful capture first");
  size_t nodes = 0;
  if (graph_ != nullptr) {
    ACCINTE_CHECK(acGraphGetNodes(graph_, nullptr, &nodes));
  }
  std::ofstream out(path);
  TORCH_CHECK(out, "debug_dump(): cannot write ", path);
  size_t draws = 0;
  for (const RandomEngines& r : random_) {
    draws += r.engines.size();
  }
  out << "// accinte graph: capture " << capture_id_.load() << " on " << *capture_stream_
      << ", memory pool " << pool_str(mempool_id_) << ", " << kernel_names_.size()
      << " kernels (" << nodes << " runtime nodes), " << draws << " random draws per replay\n";
  out << "digraph accinte_graph {\n  node [shape=box];\n";
  for (size_t i = 0; i < kernel_names_.size(); ++i) {
    out << "  k" << i << " [label=\"" << i << ": " << kernel_names_[i] << "\"];\n";
    if (i > 0) {
      out << "  k" << i - 1 << " -> k" << i << ";\n";
    }
  }
  out << "}\n";
}

} // namespace c10::accinte

// LITERALINCLUDE START: GRAPH REGISTRATION
// The key is c10::DeviceTypeName(PrivateUse1, /*lower_case=*/false): the
// backend's name, upper-cased, once torch_accinte has renamed PrivateUse1.
// The registry lives in namespace at.
namespace at {
REGISTER_GRAPH_IMPL(ACCINTE, c10::accinte::AccInteGraph);
} // namespace at
// LITERALINCLUDE END: GRAPH REGISTRATION
