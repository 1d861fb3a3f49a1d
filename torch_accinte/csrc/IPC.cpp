// Python glue for sharing accinte storages across processes (IPC.cpp), the
// C++ half of torch_accinte/accinte/reductions.py.
/// Adds _share_storage, _open_shared_storage, _ipc_wait_event,
/// _ipc_counter_value, _ipc_free_counter and _ipc_release_reference to the
/// _C module.
#include "Bindings.h"

#include <torch/csrc/Storage.h>

#include <cstring>
#include <string>

#include <csrc/runtime/AccInteEvent.h>
#include <csrc/runtime/AccInteIPC.h>

#include "Arguments.h"

namespace torch_accinte {
namespace {

py::bytes counter_bytes(const c10::accinte::IpcCounterHandle& handle) {
  return py::bytes(reinterpret_cast<const char*>(&handle), sizeof(handle));
}

// Copies an IPC handle (memory or event, 64 bytes) from Python bytes.
void ipc_handle_bytes(const py::bytes& bytes, char (&out)[ACCINTE_IPC_HANDLE_SIZE],
                      const char* what) {
  const std::string data = bytes;
  if (data.size() != sizeof(out)) {
    throw py::value_error(std::string("An accinte ") + what + " has " +
                          std::to_string(sizeof(out)) + " bytes, got " +
                          std::to_string(data.size()));
  }
  std::memcpy(out, data.data(), data.size());
}

c10::accinte::IpcCounterHandle counter_handle(const py::bytes& bytes) {
  const std::string data = bytes;
  c10::accinte::IpcCounterHandle handle;
  if (data.size() != sizeof(handle)) {
    throw py::value_error("An accinte IPC counter has " + std::to_string(sizeof(handle)) +
                          " bytes, got " + std::to_string(data.size()));
  }
  std::memcpy(&handle, data.data(), sizeof(handle));
  return handle;
}

// For torch.accinte.reductions: storages shared across processes (Note
// [Sharing across processes], Note [IPC reference counts]).
} // namespace

// Adds _share_storage, _open_shared_storage, _ipc_wait_event,
// _ipc_counter_value, _ipc_free_counter and _ipc_release_reference to the
// _C module.
void add_ipc_functions(py::module_& m) {
  m.def(
      "_share_storage",
      [](py::handle obj) {
        const c10::Storage storage = storage_arg(obj, "_share_storage");
        c10::accinte::IpcSentStorage sent = c10::accinte::share_storage(storage);
        const c10::accinte::IpcStorageHandle& shared = sent.handle;
        auto result = py::make_tuple(
            shared.device,
            py::bytes(shared.handle.reserved, sizeof(shared.handle.reserved)), shared.offset,
            shared.nbytes, counter_bytes(shared.counter),
            py::bytes(shared.event.reserved, sizeof(shared.event.reserved)));
        // The sender's event, owned by a capsule kept with the storage.
        auto* event = new c10::accinte::AccInteEvent(std::move(sent.event));
        py::capsule keep(event, "torch_accinte.ipc_event", [](PyObject* capsule) {
          delete static_cast<c10::accinte::AccInteEvent*>(
              PyCapsule_GetPointer(capsule, "torch_accinte.ipc_event"));
        });
        return py::make_tuple(result, keep);
      },
      py::arg("storage"),
      "((device, handle, offset, nbytes, counter, event), keep) of an accinte storage for "
      "another process (acIpcGetMemHandle); counter is a new reference count set to 1, "
      "event an interprocess event recorded on the current stream (acIpcGetEventHandle), "
      "which `keep` owns: hold it as long as the storage.");
  m.def(
      "_open_shared_storage",
      [](c10::DeviceIndex device, const py::bytes& handle, size_t offset, size_t nbytes,
         const py::bytes& counter, const py::bytes& event) {
        c10::accinte::IpcStorageHandle shared;
        ipc_handle_bytes(handle, shared.handle.reserved, "IPC handle");
        ipc_handle_bytes(event, shared.event.reserved, "IPC event handle");
        shared.device = device;
        shared.offset = offset;
        shared.nbytes = nbytes;
        shared.counter = counter_handle(counter);
        c10::Storage storage;
        {
          py::gil_scoped_release no_gil;
          storage = c10::accinte::open_shared_storage(shared);
        }
        return py::reinterpret_steal<py::object>(THPStorage_Wrap(std::move(storage)));
      },
      py::arg("device"), py::arg("handle"), py::arg("offset"), py::arg("nbytes"),
      py::arg("counter"), py::arg("event"),
      "A torch.UntypedStorage over memory shared by another process (acIpcOpenMemHandle), "
      "after making the current stream wait for the sender's event; it releases the "
      "counter's reference when it dies.");
  m.def(
      "_ipc_wait_event",
      [](c10::DeviceIndex device, const py::bytes& event) {
        c10::accinte::IpcStorageHandle shared;
        ipc_handle_bytes(event, shared.event.reserved, "IPC event handle");
        shared.device = device;
        c10::accinte::wait_shared_event(shared);
      },
      py::arg("device"), py::arg("event"),
      "Receiver: makes the current stream of the device wait for a sender's IPC event "
      "(acIpcOpenEventHandle, acStreamWaitEvent).");
  m.def(
      "_ipc_counter_value",
      [](const py::bytes& counter) {
        return c10::accinte::sent_counter_value(counter_handle(counter));
      },
      py::arg("counter"), "Sender: how many receivers still hold a shared storage.");
  m.def(
      "_ipc_free_counter",
      [](const py::bytes& counter) { c10::accinte::free_sent_counter(counter_handle(counter)); },
      py::arg("counter"), "Sender: recycles a counter whose value is 0.");
  m.def(
      "_ipc_release_reference",
      [](const py::bytes& counter) {
        c10::accinte::IpcStorageHandle shared;
        shared.counter = counter_handle(counter);
        c10::accinte::release_shared_reference(shared);
      },
      py::arg("counter"), "Receiver: gives up a reference without mapping the storage.");
}

const bool ipc_functions_registered = register_functions(&add_ipc_functions);

} // namespace torch_accinte
