// graph.h: stream capture, graphs, executable graphs and user objects
// (internal). See "Graphs" in ../README.md for the model.
//
// A Capture is the state of one stream between acStreamBeginCapture and
// acStreamEndCapture: the stream hands it every task instead of queueing it.
// What it records is a GraphBody, which the graph handle, every executable
// made from it and every launch still queued share, so a body (and the user
// objects it holds) lives until the last of them is done with it.
#ifndef ACCINTE_SRC_GRAPH_H_
#define ACCINTE_SRC_GRAPH_H_

#include "stream.h"

#include <atomic>
#include <thread>
#include <vector>

namespace accinte {

// cudaUserObject_t: a pointer and the function that releases it, called when
// the last reference goes (on whichever thread drops it).
class UserObject {
 public:
  UserObject(void* ptr, acHostFn_t destroy, unsigned refs) : ptr_(ptr), destroy_(destroy), refs_(refs) {}
  void retain(unsigned count) { refs_.fetch_add(count); }
  // Drops `count` references; destroys the object with the last one.
  void release(unsigned count);

 private:
  void* const ptr_;
  const acHostFn_t destroy_;
  std::atomic<unsigned> refs_;
};

// One recorded unit of work: what kind of call queued it, and the task.
struct GraphNode {
  const char* kind;
  Stream::Task task;
};

// The nodes of a graph in capture order, and the user object references the
// graph holds. Nodes are appended only while the capture is active and never
// change afterwards, so launches read them without a lock.
class GraphBody {
 public:
  ~GraphBody();  // releases the user object references
  void append(GraphNode node) { nodes_.push_back(std::move(node)); }
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  void retain(UserObject* object, unsigned count);

 private:
  std::vector<GraphNode> nodes_;
  std::mutex mutex_;  // guards userObjects_
  std::vector<std::pair<UserObject*, unsigned>> userObjects_;
};

// The capture of one stream. Thread-safe.
class Capture {
 public:
  Capture(unsigned long long id, acStreamCaptureMode mode, int device, acGraph_t graph,
          std::shared_ptr<GraphBody> body)
      : id_(id), mode_(mode), device_(device), thread_(std::this_thread::get_id()),
        graph_(graph), body_(std::move(body)) {}

  unsigned long long id() const { return id_; }
  acStreamCaptureMode mode() const { return mode_; }
  int device() const { return device_; }
  std::thread::id thread() const { return thread_; }
  acGraph_t graph() const { return graph_; }

  // Appends a node; acErrorStreamCaptureInvalidated once invalidated.
  acError_t record(const char* kind, Stream::Task task);
  // Makes acStreamEndCapture fail; the first call wins.
  void invalidate();
  bool invalidated() const;
  // Marks the capture over (records made in it stop counting as captured).
  void end();
  bool active() const;

 private:
  const unsigned long long id_;
  const acStreamCaptureMode mode_;
  const int device_;
  const std::thread::id thread_;
  const acGraph_t graph_;
  const std::shared_ptr<GraphBody> body_;
  mutable std::mutex mutex_;  // guards the two flags and body_'s nodes
  bool invalidated_ = false;
  bool ended_ = false;
};

// ---- checks made by other calls (capture.cpp) -------------------------------

// For a call that waits for the streams of `device` ("potentially unsafe" in
// CUDA's terms: synchronous copies, memsets, frees): acSuccess unless a
// capture on the device forbids it from this thread (Global, or ThreadLocal
// begun here), which is then invalidated; the call returns the error.
acError_t checkUnsafeCall(int device);

// For acDeviceSynchronize: invalidates every active capture on `device` and
// returns acErrorStreamCaptureUnsupported if there was one.
acError_t checkDeviceNotCapturing(int device);

// For a call that would wait for or query `stream` itself: if it is
// capturing, invalidates the capture and returns
// acErrorStreamCaptureUnsupported.
acError_t checkStreamNotCapturing(Stream& stream);

// The graph table (graph.cpp): the body behind a live acGraph_t.
acError_t resolveGraph(acGraph_t handle, std::shared_ptr<GraphBody>* body);
// Registers a new graph handle for `body` (the capture's graph).
acGraph_t createGraph(std::shared_ptr<GraphBody> body);
// Drops a graph handle (acGraphDestroy, or a failed capture).
acError_t destroyGraph(acGraph_t handle);

}  // namespace accinte

#endif  // ACCINTE_SRC_GRAPH_H_
