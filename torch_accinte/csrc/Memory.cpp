// Python glue for memory: the per-process memory fraction, pinned (host)
// allocator statistics, the counters of the emulation's cache of kernels'
// scratch memory, and memory history and snapshots (the counterparts of
// torch/csrc/cuda/Module.cpp's memory functions and memory_snapshot.cpp).
//
// Stacks: while history is recorded with stacks, the allocator calls the
// recorder installed here, which captures the Python stack as a
// torch::CapturedTraceback (cheap: code objects and offsets, no strings).
// Frames are turned into {filename, line, name} only when a snapshot is
// taken (torch::symbolize), with the GIL held.
#include "Bindings.h"

#include <pybind11/stl.h>

#include <ATen/core/CachingHostAllocator.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include <csrc/emulation/KernelScratch.h>
#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteHostAllocator.h>

#include <optional>
#include <string>
#include <thread>

namespace py = pybind11;

namespace torch_accinte {
namespace {

using c10::accinte::RecordContext;
using c10::accinte::TraceEntry;

py::dict stat_to_dict(const c10::CachingAllocator::Stat& stat) {
  py::dict d;
  d["current"] = stat.current;
  d["peak"] = stat.peak;
  d["allocated"] = stat.allocated;
  d["freed"] = stat.freed;
  return d;
}

py::dict duration_to_dict(const c10::CachingAllocator::DurationStat& stat) {
  py::dict d;
  d["total"] = stat.total;
  d["max"] = stat.max;
  d["min"] = stat.min;
  d["count"] = stat.count;
  d["avg"] = stat.count == 0 ? 0 : stat.total / stat.count;
  return d;
}

// Same nesting as torch._C._cuda_hostMemoryStats.
py::dict host_memory_stats() {
  at::HostStats stats;
  {
    py::gil_scoped_release no_gil;
    stats = c10::accinte::getHostAllocator()->get_stats();
  }
  py::dict d;
  d["allocations"] = stat_to_dict(stats.allocations);
  d["allocated_bytes"] = stat_to_dict(stats.allocated_bytes);
  d["active_requests"] = stat_to_dict(stats.active_requests);
  d["active_bytes"] = stat_to_dict(stats.active_bytes);
  d["num_host_alloc"] = stats.num_host_alloc;
  d["num_host_free"] = stats.num_host_free;
  d["host_alloc_time"] = duration_to_dict(stats.host_alloc_time);
  d["host_free_time"] = duration_to_dict(stats.host_free_time);
  return d;
}

std::shared_ptr<c10::GatheredContext> gather_python() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, /*cpp=*/false);
}

std::shared_ptr<c10::GatheredContext> gather_python_and_cpp() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, /*cpp=*/true);
}

// torch.accinte.memory._record_memory_history: same arguments and meaning as
// torch.cuda.memory._record_memory_history.
void record_memory_history(const std::optional<std::string>& enabled,
                           const std::optional<std::string>& context, const std::string& stacks,
                           size_t max_entries, bool clear_history) {
  TORCH_CHECK(!enabled || *enabled == "state" || *enabled == "all",
              "_record_memory_history: enabled must be None, 'state' or 'all', not '", *enabled,
              "'");
  TORCH_CHECK(!context || *context == "state" || *context == "alloc" || *context == "all",
              "_record_memory_history: context must be None, 'state', 'alloc' or 'all', not '",
              *context, "'");
  TORCH_CHECK(stacks == "python" || stacks == "all",
              "_record_memory_history: stacks must be 'python' or 'all', not '", stacks, "'");
  c10::accinte::HistorySettings settings;
  if (enabled) {
    settings.record_trace = *enabled == "all";
    settings.max_entries = settings.record_trace ? max_entries : 0;
    if (context) {
      TORCH_CHECK(settings.record_trace || *context == "state",
                  "_record_memory_history: context='", *context,
                  "' keeps stacks of trace entries, which needs enabled='all'");
      settings.when = *context == "all"     ? RecordContext::ALL
                      : *context == "alloc" ? RecordContext::ALLOC
                                            : RecordContext::STATE;
      settings.recorder = stacks == "all" ? &gather_python_and_cpp : &gather_python;
    }
  }
  py::gil_scoped_release no_gil;
  c10::accinte::record_history(std::move(settings), clear_history);
}

// Symbolizes many contexts at once (frames shared between stacks are
// symbolized once). Call collect() for every context in a fixed order, then
// symbolize(), then next() in the same order.
class FrameTable {
 public:
  void collect(const std::shared_ptr<c10::GatheredContext>& context) {
    if (context) {
      tracebacks_.push_back(torch::getCapturedTracebackFromContext(context));
    }
  }

  void symbolize() {
    torch::SymbolizedTracebacks s = torch::symbolize(tracebacks_);
    std::vector<py::dict> frames;
    frames.reserve(s.all_frames.size());
    for (const auto& f : s.all_frames) {
      py::dict d;
      d["filename"] = f.filename;
      d["line"] = f.lineno;
      d["name"] = f.funcname;
      frames.push_back(std::move(d));
    }
    for (const auto& traceback : s.tracebacks) {
      py::list l;
      for (const uint64_t index : traceback) {
        l.append(frames.at(index));
      }
      lists_.push_back(std::move(l));
    }
  }

  /// The frames of the next context passed to collect (a list, empty for none).
  py::list next(const std::shared_ptr<c10::GatheredContext>& context) {
    return context ? lists_.at(next_++) : py::list();
  }

 private:
  std::vector<torch::CapturedTraceback*> tracebacks_;
  std::vector<py::list> lists_;
  size_t next_ = 0;
};

const char* action_name(TraceEntry::Action action) {
  switch (action) {
    case TraceEntry::ALLOC: return "alloc";
    case TraceEntry::FREE_REQUESTED: return "free_requested";
    case TraceEntry::FREE_COMPLETED: return "free_completed";
    case TraceEntry::SEGMENT_ALLOC: return "segment_alloc";
    case TraceEntry::SEGMENT_FREE: return "segment_free";
    case TraceEntry::SEGMENT_MAP: return "segment_map";
    case TraceEntry::SEGMENT_UNMAP: return "segment_unmap";
    case TraceEntry::SNAPSHOT: return "snapshot";
    case TraceEntry::OOM: return "oom";
  }
  return "unknown";
}

// torch.accinte.memory._snapshot: the dict PyTorch's memory visualiser
// (torch.cuda._memory_viz, pytorch.org/memory_viz) reads.
py::dict memory_snapshot() {
  c10::accinte::SnapshotInfo info;
  {
    py::gil_scoped_release no_gil;
    info = c10::accinte::snapshot();
  }
  FrameTable table;
  for (const auto& segment : info.segments) {
    table.collect(segment.context_when_allocated);
    for (const auto& block : segment.blocks) {
      table.collect(block.context_when_allocated);
    }
  }
  for (const auto& trace : info.device_traces) {
    for (const auto& entry : trace) {
      table.collect(entry.context_);
    }
  }
  table.symbolize();

  py::list segments;
  for (const auto& segment : info.segments) {
    py::dict s;
    s["device"] = segment.device;
    s["address"] = segment.address;
    s["total_size"] = segment.total_size;
    s["allocated_size"] = segment.allocated_size;
    s["active_size"] = segment.active_size;
    s["requested_size"] = segment.requested_size;
    s["stream"] = reinterpret_cast<uintptr_t>(segment.stream);
    s["segment_type"] = segment.is_large ? "large" : "small";
    s["segment_pool_id"] = py::make_tuple(segment.owner_private_pool_id.first,
                                          segment.owner_private_pool_id.second);
    s["is_expandable"] = segment.is_expandable;
    s["frames"] = table.next(segment.context_when_allocated);
    py::list blocks;
    size_t address = segment.address;
    for (const auto& block : segment.blocks) {
      py::dict b;
      b["address"] = address;
      b["size"] = block.size;
      b["requested_size"] = block.requested_size;
      b["state"] = block.allocated ? "active_allocated"
                   : block.active  ? "active_pending_free"
                                   : "inactive";
      b["frames"] = table.next(block.context_when_allocated);
      blocks.append(std::move(b));
      address += block.size;
    }
    s["blocks"] = std::move(blocks);
    segments.append(std::move(s));
  }

  py::list device_traces;
  for (const auto& trace : info.device_traces) {
    py::list entries;
    for (const auto& entry : trace) {
      py::dict e;
      e["action"] = action_name(entry.action_);
      // For an OOM the address field carries the device's free bytes.
      e[entry.action_ == TraceEntry::OOM ? "device_free" : "addr"] = entry.addr_;
      e["size"] = entry.size_;
      e["stream"] = reinterpret_cast<uintptr_t>(entry.stream_);
      e["time_us"] = entry.time_.t_;
      e["frames"] = table.next(entry.context_);
      e["compile_context"] = entry.compile_context_;
      e["user_metadata"] = entry.user_metadata_;
      entries.append(std::move(e));
    }
    device_traces.append(std::move(entries));
  }
  py::dict result;
  result["segments"] = std::move(segments);
  result["device_traces"] = std::move(device_traces);
  return result;
}

// LITERALINCLUDE START: MEMPOOL BINDINGS
// use_mem_pool routes the calling thread's allocations, whatever the stream,
// as torch.cuda's _cuda_beginAllocateCurrentThreadToPool does.
void begin_allocate_current_thread_to_pool(c10::DeviceIndex device, c10::MempoolId_t id) {
  c10::accinte::begin_allocate_to_pool(
      device, id, [thread = std::this_thread::get_id()](const c10::accinte::AccInteStream&) {
        return std::this_thread::get_id() == thread;
      });
}

// A MemPool is gone: its use released, then its free segments returned if
// it was the last user (torch.cuda's MemPool destructor).
void release_mempool(c10::DeviceIndex device, c10::MempoolId_t id) {
  c10::accinte::release_pool(device, id);
  c10::accinte::empty_pool_cache(device, id);
}
// LITERALINCLUDE END: MEMPOOL BINDINGS

void add_mempool_functions(py::module_& m) {
  using no_gil = py::call_guard<py::gil_scoped_release>;
  m.def("_mempool_create", &c10::accinte::create_or_incref_pool, py::arg("device"), py::arg("id"),
        py::arg("use_on_oom"), py::arg("no_split"), no_gil(),
        "Creates private pool `id` on a device (or takes one more use of it).");
  m.def("_mempool_use_count", &c10::accinte::pool_use_count, py::arg("device"), py::arg("id"),
        no_gil(), "Users holding private pool `id` (0 once released).");
  m.def("_mempool_release", &release_mempool, py::arg("device"), py::arg("id"), no_gil(),
        "Releases a MemPool's use of its pool and, with the last use, its free segments.");
  m.def("_begin_allocate_current_thread_to_pool", &begin_allocate_current_thread_to_pool,
        py::arg("device"), py::arg("id"), no_gil(),
        "Routes this thread's allocations on a device to private pool `id` (one more use).");
  m.def("_end_allocate_to_pool", &c10::accinte::end_allocate_to_pool, py::arg("device"),
        py::arg("id"), no_gil(), "Stops routing allocations to private pool `id`.");
  m.def("_release_pool", &c10::accinte::release_pool, py::arg("device"), py::arg("id"), no_gil(),
        "Releases one use of private pool `id`.");
}

} // namespace

// Adds _set_memory_fraction, _get_memory_fraction, _host_memory_stats,
// _reset_{accumulated,peak}_host_memory_stats, _record_memory_history and
// _memory_snapshot to the _C module.
void add_memory_functions(py::module_& m) {
  using no_gil = py::call_guard<py::gil_scoped_release>;
  m.def("_set_memory_fraction", &c10::accinte::set_memory_fraction, py::arg("fraction"),
        py::arg("device"), no_gil(),
        "Caps the caching allocator's reserved memory on a device at fraction * capacity.");
  m.def("_get_memory_fraction", &c10::accinte::get_memory_fraction, py::arg("device"), no_gil(),
        "The fraction set by _set_memory_fraction (1.0 by default).");
  m.def("_host_memory_stats", &host_memory_stats,
        "Pinned-memory allocator statistics (at::HostAllocator::get_stats) as a nested dict.");
  m.def(
      "_reset_accumulated_host_memory_stats",
      [] { c10::accinte::getHostAllocator()->reset_accumulated_stats(); }, no_gil(),
      "Zeroes the pinned-memory allocator's cumulative counters.");
  m.def(
      "_reset_peak_host_memory_stats",
      [] { c10::accinte::getHostAllocator()->reset_peak_stats(); }, no_gil(),
      "Sets the pinned-memory allocator's peaks to their current values.");
  m.def(
      "_kernel_scratch_stats",
      [] {
        const auto stats = at::native::accinte::kernel_scratch_stats();
        py::dict d;
        d["installed"] = stats.installed;
        d["cached_bytes"] = stats.cached_bytes;
        d["hits"] = stats.hits;
        d["misses"] = stats.misses;
        d["returns"] = stats.returns;
        return d;
      },
      "The cache of kernels' CPU scratch memory (Note [accinte kernel scratch memory]): whether "
      "it wraps the CPU allocator yet (from the device's initialisation on), free bytes kept, "
      "allocations it served, allocations it passed to the CPU's allocator, "
      "blocks freed back into it.");
  m.def("_record_memory_history", &record_memory_history, py::arg("enabled"),
        py::arg("context"), py::arg("stacks"), py::arg("max_entries"),
        py::arg("clear_history"), "Starts or stops recording the allocator's history.");
  m.def("_memory_snapshot", &memory_snapshot,
        "Segments, blocks and traces of every device, as torch.cuda.memory._snapshot returns.");
}

const bool memory_functions_registered = register_functions(&add_memory_functions);
const bool mempool_registered = register_functions(&add_mempool_functions);

} // namespace torch_accinte
