// graph.cpp: graphs and executable graphs (cudaGraph_t, cudaGraphExec_t),
// their launch, and user objects (cudaUserObject_t).
//
// A launch queues the whole graph as one task on the stream: the nodes run in
// capture order on the stream's worker, each on the memory it was recorded
// with. The task owns a reference to the graph's body, so destroying the
// graph or the executable while launches are pending is safe, and the user
// objects the graph holds (the closures of captured kernels, typically) are
// released only after the last pending launch has run.
#include "graph.h"

#include <unordered_map>

namespace accinte {
namespace {

// An executable graph. Instantiation only freezes the body: the nodes are
// already in the order they run in.
struct GraphExec {
  std::shared_ptr<GraphBody> body;
};

// Live graphs and executables by handle. Guarded by graphTableMutex().
struct GraphTable {
  std::unordered_map<acGraph_t, std::shared_ptr<GraphBody>> graphs;
  std::unordered_map<acGraphExec_t, std::unique_ptr<GraphExec>> execs;
};

GraphTable& graphTable() {
  static auto* table = new GraphTable();
  return *table;
}

acError_t resolveExec(acGraphExec_t handle, std::shared_ptr<GraphBody>* body) {
  std::lock_guard<std::mutex> lock(graphTableMutex());
  const auto it = graphTable().execs.find(handle);
  if (it == graphTable().execs.end()) {
    return acErrorInvalidResourceHandle;
  }
  *body = it->second->body;
  return acSuccess;
}

// Runs every node; the first failure is the launch's error (later nodes still
// run, as work queued behind a failed kernel does).
acError_t runGraph(const GraphBody& body) {
  acError_t first = acSuccess;
  for (const GraphNode& node : body.nodes()) {
    acError_t e = acErrorLaunchFailure;
    try {
      e = node.task();
    } catch (...) {
    }
    if (first == acSuccess) {
      first = e;
    }
  }
  return first;
}

}  // namespace

std::mutex& graphTableMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

void UserObject::release(unsigned count) {
  if (refs_.fetch_sub(count) == count) {
    destroy_(ptr_);
    delete this;
  }
}

GraphBody::~GraphBody() {
  for (const auto& [object, count] : userObjects_) {
    object->release(count);
  }
}

void GraphBody::append(GraphNode node) {
  std::lock_guard<std::mutex> lock(mutex_);
  nodes_.push_back(std::move(node));
}

size_t GraphBody::nodeCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nodes_.size();
}

void GraphBody::retain(UserObject* object, unsigned count) {
  std::lock_guard<std::mutex> lock(mutex_);
  userObjects_.emplace_back(object, count);
}

acError_t resolveGraph(acGraph_t handle, std::shared_ptr<GraphBody>* body) {
  std::lock_guard<std::mutex> lock(graphTableMutex());
  const auto it = graphTable().graphs.find(handle);
  if (it == graphTable().graphs.end()) {
    return acErrorInvalidResourceHandle;
  }
  *body = it->second;
  return acSuccess;
}

acGraph_t createGraph(std::shared_ptr<GraphBody> body) {
  const auto handle = reinterpret_cast<acGraph_t>(body.get());
  std::lock_guard<std::mutex> lock(graphTableMutex());
  graphTable().graphs.emplace(handle, std::move(body));
  return handle;
}

acError_t destroyGraph(acGraph_t handle) {
  std::shared_ptr<GraphBody> doomed;  // released outside the lock
  std::lock_guard<std::mutex> lock(graphTableMutex());
  const auto it = graphTable().graphs.find(handle);
  if (it == graphTable().graphs.end()) {
    return acErrorInvalidResourceHandle;
  }
  // The capture still refers to its graph; acStreamEndCapture drops a failed
  // capture's graph after sealing it.
  if (!it->second->sealed()) {
    return acErrorIllegalState;
  }
  doomed = std::move(it->second);
  graphTable().graphs.erase(it);
  return acSuccess;
}

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acGraphInstantiate(acGraphExec_t* exec, acGraph_t graph, unsigned long long flags) {
  return apiCall([&] {
    if (exec == nullptr || flags != 0) {
      return acErrorInvalidValue;
    }
    auto created = std::make_unique<GraphExec>();
    if (const acError_t e = resolveGraph(graph, &created->body); e != acSuccess) {
      return e;
    }
    // The graph of a capture underway (acStreamGetCaptureInfo) still grows.
    if (!created->body->sealed()) {
      return acErrorStreamCaptureUnsupported;
    }
    const auto handle = reinterpret_cast<acGraphExec_t>(created.get());
    {
      std::lock_guard<std::mutex> lock(graphTableMutex());
      graphTable().execs.emplace(handle, std::move(created));
    }
    *exec = handle;
    return acSuccess;
  });
}

// LITERALINCLUDE START: GRAPH LAUNCH
acError_t acGraphLaunch(acGraphExec_t exec, acStream_t stream) {
  return apiCall([&] {
    std::shared_ptr<GraphBody> body;
    if (const acError_t e = resolveExec(exec, &body); e != acSuccess) {
      return e;
    }
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    // Launching a graph into a capture would need child-graph nodes.
    if (s->capture() != nullptr) {
      return acErrorStreamCaptureUnsupported;
    }
    return s->enqueue([body = std::move(body)] { return runGraph(*body); }, "graph",
                      Stream::WhenFull::kWait);
  });
}
// LITERALINCLUDE END: GRAPH LAUNCH

acError_t acGraphGetNodes(acGraph_t graph, void* nodes, size_t* numNodes) {
  return apiCall([&] {
    if (nodes != nullptr || numNodes == nullptr) {
      return nodes != nullptr ? acErrorNotSupported : acErrorInvalidValue;
    }
    std::shared_ptr<GraphBody> body;
    if (const acError_t e = resolveGraph(graph, &body); e != acSuccess) {
      return e;
    }
    // A graph still being captured grows; its count is a snapshot.
    *numNodes = body->nodeCount();
    return acSuccess;
  });
}

acError_t acGraphDestroy(acGraph_t graph) {
  return apiCall([&] { return destroyGraph(graph); });
}

acError_t acGraphExecDestroy(acGraphExec_t exec) {
  return apiCall([&] {
    std::unique_ptr<GraphExec> doomed;  // released outside the lock
    std::lock_guard<std::mutex> lock(graphTableMutex());
    const auto it = graphTable().execs.find(exec);
    if (it == graphTable().execs.end()) {
      return acErrorInvalidResourceHandle;
    }
    doomed = std::move(it->second);
    graphTable().execs.erase(it);
    return acSuccess;
  });
}

acError_t acUserObjectCreate(acUserObject_t* object, void* ptr, acHostFn_t destroy,
                             unsigned int initialRefcount, unsigned int flags) {
  return apiCall([&] {
    if (object == nullptr || destroy == nullptr || initialRefcount == 0 ||
        flags != acUserObjectNoDestructorSync) {
      return acErrorInvalidValue;
    }
    *object = reinterpret_cast<acUserObject_t>(new UserObject(ptr, destroy, initialRefcount));
    return acSuccess;
  });
}

acError_t acUserObjectRelease(acUserObject_t object, unsigned int count) {
  return apiCall([&] {
    if (object == nullptr || count == 0) {
      return acErrorInvalidValue;
    }
    reinterpret_cast<UserObject*>(object)->release(count);
    return acSuccess;
  });
}

acError_t acGraphRetainUserObject(acGraph_t graph, acUserObject_t object, unsigned int count,
                                  unsigned int flags) {
  return apiCall([&] {
    if (object == nullptr || count == 0 || (flags & ~acGraphUserObjectMove) != 0) {
      return acErrorInvalidValue;
    }
    std::shared_ptr<GraphBody> body;
    if (const acError_t e = resolveGraph(graph, &body); e != acSuccess) {
      return e;
    }
    auto* user = reinterpret_cast<UserObject*>(object);
    if ((flags & acGraphUserObjectMove) == 0) {
      user->retain(count);
    }
    body->retain(user, count);
    return acSuccess;
  });
}

}  // extern "C"
