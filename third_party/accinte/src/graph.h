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
#include <unordered_map>
#include <vector>

namespace accinte {

// cudaUserObject_t: a pointer and the function that releases it, called when
// the last reference goes (on whichever thread drops it).
class UserObject {
 public:
  UserObject(void* ptr, acHostFn_t destroy, unsigned refs)
      : ptr_(ptr), destroy_(destroy), refs_(refs) {}
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
// graph holds. A body is built by its capture and then *sealed* by
// acStreamEndCapture: nodes are appended (under mutex_) only before, and
// nodes() may be read without a lock only after, which is why executables
// are made only from sealed bodies (acGraphInstantiate refuses the graph of
// a capture still underway).
class GraphBody {
 public:
  ~GraphBody();  // releases the user object references
  void append(GraphNode node);
  // The nodes; only once sealed (they never change afterwards).
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  // How many nodes there are so far; any time.
  size_t nodeCount() const;
  void seal() { sealed_.store(true, std::memory_order_release); }
  bool sealed() const { return sealed_.load(std::memory_order_acquire); }
  void retain(UserObject* object, unsigned count);

 private:
  mutable std::mutex mutex_;  // guards nodes_ until sealed, and userObjects_
  std::vector<GraphNode> nodes_;
  std::atomic<bool> sealed_{false};
  std::vector<std::pair<UserObject*, unsigned>> userObjects_;
};

// The capture begun on one stream (its origin), which other streams may join
// by waiting for a point in it (acStreamWaitEvent: a fork). Every stream of
// the capture hands it its tasks, which are appended to one body in the
// order they are issued: an order that respects every dependency the
// program expressed (a joined stream's work is issued after the point it
// waited for, and the work after a join after the point of the joined
// stream it waited for), so replays run the nodes in that order on one
// stream. Thread-safe.
class Capture : public std::enable_shared_from_this<Capture> {
 public:
  Capture(unsigned long long id, acStreamCaptureMode mode, int device, const Stream* origin,
          acGraph_t graph, std::shared_ptr<GraphBody> body)
      : id_(id), mode_(mode), device_(device), thread_(std::this_thread::get_id()),
        origin_(origin), graph_(graph), body_(std::move(body)) {}

  unsigned long long id() const { return id_; }
  acStreamCaptureMode mode() const { return mode_; }
  int device() const { return device_; }
  std::thread::id thread() const { return thread_; }
  // The stream acStreamBeginCapture was called on, which alone may end it.
  const Stream* origin() const { return origin_; }
  acGraph_t graph() const { return graph_; }
  const std::shared_ptr<GraphBody>& body() const { return body_; }

  // Appends a node issued on `from`; acErrorStreamCaptureInvalidated once
  // invalidated.
  acError_t record(const Stream* from, const char* kind, Stream::Task task);
  // Makes the capture invalidated; acStreamEndCapture then fails.
  void invalidate();
  bool invalidated() const;
  // Marks the capture over (records made in it stop counting as captured).
  void end();
  bool active() const;

  // ---- forks (streams other than the origin) ----
  // Makes `stream` (not capturing) part of this capture; false if it began
  // capturing meanwhile.
  bool join(const std::shared_ptr<Stream>& stream);
  // Nodes issued on `stream` so far: the position of an event record.
  uint64_t position(const Stream* stream) const;
  // Another stream of the capture waited for `stream`'s record at
  // `position`: its work up to there is joined back.
  void joinedBack(const Stream* stream, uint64_t position);
  // True if a joined stream has nodes no other stream waited for.
  bool unjoined() const;
  // The joined streams (acStreamEndCapture releases them).
  std::vector<std::shared_ptr<Stream>> forks() const;

 private:
  struct Fork {
    std::shared_ptr<Stream> stream;
    uint64_t joinedUpTo = 0;
  };

  const unsigned long long id_;
  const acStreamCaptureMode mode_;
  const int device_;
  const std::thread::id thread_;
  const Stream* const origin_;
  const acGraph_t graph_;
  const std::shared_ptr<GraphBody> body_;
  // Guards the flags, the counts and the forks (the body locks its nodes).
  // Taken after a Stream's lock, never before.
  mutable std::mutex mutex_;
  bool invalidated_ = false;
  bool ended_ = false;
  std::unordered_map<const Stream*, uint64_t> issued_;  // nodes per stream
  std::unordered_map<const Stream*, Fork> forks_;
};

// ---- checks made by other calls (capture.cpp) -------------------------------

// False when no stream captures, as acCapturesUnderway() == 0: lets the calls
// below, and a copy deciding whether it may wait, skip the stream's lock on
// the per-call path. One atomic load. A capture another thread begins
// concurrently is unordered with the caller's call, as on CUDA.
bool capturesUnderway();

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
