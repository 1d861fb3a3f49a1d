// ipc_event.h: the cross-process side of an interprocess event
// (acEventInterprocess, acIpc*EventHandle), internal. See Note [IPC events]
// and Note [IPC event pages] in ipc_event.cpp.
#ifndef ACCINTE_SRC_IPC_EVENT_H_
#define ACCINTE_SRC_IPC_EVENT_H_

#include <accinte/accinte.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>

namespace accinte {

struct IpcEventSlot;
class IpcEventPage;

// One process's view of an interprocess event: a slot of a shared page. The
// exporter takes a free slot with the event and numbers the records; an
// importer opens the slot from a handle and waits for them. Owned by
// shared_ptr: the event, the exporter's pending record tasks and an
// importer's pending wait tasks each hold one, so the slot outlives
// acEventDestroy until they are done; then the exporter's slot is free for
// another event. Thread-safe.
class IpcEvent {
 public:
  // A free slot for an event of `device` in this process (the exporter).
  // acErrorIpcDescriptorsExhausted when every slot is taken and no
  // descriptor is left for another page; acErrorMemoryAllocation when the
  // system refuses the page's memory.
  static acError_t create(int device, std::shared_ptr<IpcEvent>* out);
  // The slot a handle names, opened in this process (the importer).
  // acErrorMapBufferObjectFailed for a corrupt or stale handle or a gone
  // event; acErrorInvalidDevice if this process has no such device;
  // acErrorIpcDescriptorsExhausted when the exporter's page is not open here
  // yet and no descriptor is left to open it.
  static acError_t open(const acIpcEventHandle_t& handle, std::shared_ptr<IpcEvent>* out);

  // Exporter: publishes any record still unpublished (none, once every
  // record task has run) and frees the slot.
  ~IpcEvent();
  IpcEvent(const IpcEvent&) = delete;
  IpcEvent& operator=(const IpcEvent&) = delete;

  int device() const { return device_; }
  bool imported() const { return imported_; }
  // The handle that opens this event elsewhere (exporter only).
  void exportHandle(acIpcEventHandle_t* handle) const;

  // Exporter: numbers a new record, which importers waiting from now on
  // wait for. finishRecord(its number) must follow exactly once.
  uint64_t beginRecord();
  // Exporter: record `generation` has completed. Publishes every record up
  // to the first one still pending, so that a published number implies all
  // earlier records completed too (records on different streams may finish
  // out of order), and wakes the importers' waits.
  void finishRecord(uint64_t generation);

  // The latest record made so far; a number already published if the event
  // was never recorded or (importer) has been destroyed since.
  uint64_t latest() const;
  // acSuccess once record `generation` has been published; acErrorNotReady
  // while it may still be; acErrorMapBufferObjectFailed when it never will
  // be (an importer whose exporter exited first).
  acError_t query(uint64_t generation) const;
  // Blocks until query(generation) is not acErrorNotReady, and returns it.
  acError_t wait(uint64_t generation) const;

 private:
  IpcEvent(int device, bool imported, std::shared_ptr<IpcEventPage> page, uint32_t slot,
           uint64_t serial);
  IpcEventSlot& slot() const;

  const int device_;
  const bool imported_;
  const std::shared_ptr<IpcEventPage> page_;  // the shared page, mapped here
  const uint32_t slotIndex_;                  // the event's slot on it
  const uint64_t serial_;                     // the event's number: slots are reused
  // Exporter: records completed ahead of an earlier one still pending, and
  // the last number published (mirrors the slot's).
  std::mutex mutex_;
  std::set<uint64_t> finishedEarly_;
  uint64_t published_ = 0;
};

}  // namespace accinte

#endif  // ACCINTE_SRC_IPC_EVENT_H_
