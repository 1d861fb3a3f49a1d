// ipc_event.h: the cross-process side of an interprocess event
// (acEventInterprocess, acIpc*EventHandle), internal. See Note [IPC events]
// in ipc_event.cpp.
#ifndef ACCINTE_SRC_IPC_EVENT_H_
#define ACCINTE_SRC_IPC_EVENT_H_

#include <accinte/accinte.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>

namespace accinte {

struct IpcEventPage;

// One process's view of an interprocess event's shared page. The exporter
// creates it with the event and numbers the records; an importer opens it
// from a handle and waits for them. Owned by shared_ptr: the event, the
// exporter's pending record tasks and an importer's pending wait tasks each
// hold one, so the page (and the exporter's descriptor, which importers
// check for liveness) outlives acEventDestroy until they are done.
// Thread-safe.
class IpcEvent {
 public:
  // A new page for an event of `device` in this process (the exporter).
  // acErrorMemoryAllocation when the system refuses a memfd or its mapping.
  static acError_t create(int device, std::shared_ptr<IpcEvent>* out);
  // The page a handle names, opened in this process (the importer).
  // acErrorMapBufferObjectFailed for a corrupt or stale handle or a gone
  // event; acErrorInvalidDevice if this process has no such device.
  static acError_t open(const acIpcEventHandle_t& handle, std::shared_ptr<IpcEvent>* out);

  ~IpcEvent();
  IpcEvent(const IpcEvent&) = delete;
  IpcEvent& operator=(const IpcEvent&) = delete;

  int device() const { return device_; }
  bool imported() const { return imported_; }
  // The handle that opens this page elsewhere (exporter only).
  void exportHandle(acIpcEventHandle_t* handle) const;

  // Exporter: numbers a new record (1, 2, ...), which importers waiting from
  // now on wait for. finishRecord(its number) must follow exactly once.
  uint64_t beginRecord();
  // Exporter: record `generation` has completed. Publishes every record up
  // to the first one still pending, so that a published number implies all
  // earlier records completed too (records on different streams may finish
  // out of order), and wakes the importers' waits.
  void finishRecord(uint64_t generation);

  // The latest record made so far (0: never recorded).
  uint64_t latest() const;
  // acSuccess once record `generation` has been published; acErrorNotReady
  // while it may still be; acErrorMapBufferObjectFailed when it never will
  // be (an importer whose exporter exited first).
  acError_t query(uint64_t generation) const;
  // Blocks until query(generation) is not acErrorNotReady, and returns it.
  acError_t wait(uint64_t generation) const;

 private:
  // Where an importer looks for the exporter's descriptor of the page.
  struct Exporter {
    int pid = 0;
    int fd = -1;
  };
  IpcEvent(int device, bool imported, int fd, IpcEventPage* page, Exporter exporter)
      : device_(device), imported_(imported), fd_(fd), page_(page), exporter_(exporter) {}
  // Importer: whether the exporter still holds the page (Note [IPC events]).
  bool exporterAlive() const;

  const int device_;
  const bool imported_;
  const int fd_;              // this process's descriptor of the page's memfd
  IpcEventPage* const page_;  // the page, mapped MAP_SHARED
  const Exporter exporter_;   // importer only
  // Exporter: records completed ahead of an earlier one still pending, and
  // the last number published (mirrors the page's).
  std::mutex mutex_;
  std::set<uint64_t> finishedEarly_;
  uint64_t published_ = 0;
};

}  // namespace accinte

#endif  // ACCINTE_SRC_IPC_EVENT_H_
