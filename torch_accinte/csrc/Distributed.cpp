// Python glue for torch.distributed (Distributed.cpp): the ProcessGroupACCL
// class, which torch_accinte/distributed.py registers as the "accl" backend.
/// Adds ProcessGroupACCL to the _C module. Needs torch.distributed's types
/// (c10d::Backend), registered when torch is imported.
#include "Bindings.h"

#include <csrc/distributed/GlooEngine.h>
#include <csrc/distributed/ProcessGroupACCL.h>
#include <csrc/distributed/ShmEngine.h>

#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>

namespace py = pybind11;

namespace torch_accinte {

// LITERALINCLUDE START: ACCL BINDING
// Adds ProcessGroupACCL to the _C module. Needs torch.distributed's types
// (c10d::Backend), registered when torch is imported.
void add_distributed_functions(py::module_& m) {
  using c10d::accinte::ProcessGroupACCL;
  // A c10d::Backend subclass, so that torch.distributed can register it as a
  // process group's backend for accinte (ProcessGroup._register_backend).
  py::class_<ProcessGroupACCL, c10d::Backend, c10::intrusive_ptr<ProcessGroupACCL>>(
      m, "ProcessGroupACCL",
      "torch.distributed's backend for accinte tensors: collectives as kernels on a "
      "communication stream, moved through shared memory (ranks on one host) or by Gloo, "
      "on the device memory (see csrc/distributed/).")
      .def(py::init([](const py::object& gloo, int rank, int size,
                       std::chrono::milliseconds timeout, int shm_fd, uint64_t shm_nonce,
                       size_t shm_slot_bytes) {
             // The Gloo group is bound by torch with a holder of its own; take
             // a new reference through its c10d::Backend base instead.
             auto* backend = gloo.cast<c10d::Backend*>();
             std::unique_ptr<c10d::accinte::CollectiveEngine> engine =
                 std::make_unique<c10d::accinte::GlooEngine>(
                     c10::intrusive_ptr<c10d::Backend>::reclaim_copy(backend));
             if (shm_fd >= 0) { // Note [accl shm engine]
               auto segment = std::make_unique<c10d::accinte::ShmSegment>(
                   shm_fd, rank, size, shm_slot_bytes, shm_nonce, timeout);
               engine = std::make_unique<c10d::accinte::ShmEngine>(std::move(segment),
                                                                    std::move(engine));
             }
             return c10::make_intrusive<ProcessGroupACCL>(rank, size, std::move(engine),
                                                         timeout);
           }),
           py::arg("gloo"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::arg("shm_fd") = -1, py::arg("shm_nonce") = 0, py::arg("shm_slot_bytes") = 0,
           "A group of `size` ranks over `gloo` (a dist.ProcessGroupGloo of the same ranks, "
           "used by nothing else). With `shm_fd` (a memfd every rank of the group maps: rank "
           "0's own, the others' opened from it), the hot collectives move through that "
           "shared memory (ShmEngine, wrapping Gloo) with slots of `shm_slot_bytes`; "
           "`shm_nonce` tells the segment apart from any other file.")
      .def_property_readonly(
          "engine", [](const ProcessGroupACCL& pg) { return pg.engine_name(); },
          "The engine that moves the data: \"shm\" or \"gloo\".");
}
// LITERALINCLUDE END: ACCL BINDING

const bool distributed_functions_registered = register_functions(&add_distributed_functions);

} // namespace torch_accinte
