"""transformers' ``Trainer`` and accelerate on accinte, with nothing imported
from here: a plain ``TrainingArguments()`` trains on accinte when accinte is
the machine's accelerator, and ``bf16=True`` is allowed, as on CUDA.

transformers 5.x and accelerate 1.x pick their device from a list of device
types and, for a type outside the list, both read the ``ACCELERATE_TORCH_DEVICE``
environment variable: ``TrainingArguments._setup_devices``
(transformers/training_args.py:1946 in 5.23) and ``PartialState.__init__``
(accelerate/state.py:182 in 1.15). That variable is the libraries' extension
point. ``on_accelerate_state`` sets it to ``accinte:0`` (CUDA's ``cuda:0``)
when accelerate's state module is imported, which transformers' arguments
module does at its top, so before either library reads it; a value the user
has set is kept, and nothing is set where accinte is not the machine's
accelerator. ``install_import_hooks`` (``__init__.py``) calls the functions
below right after those modules are imported. (This module held a
``TrainingArguments`` subclass before; transformers' own class now does all
it did.)

Two lines have no extension point and are worked around, each only while the
variable names an accinte device:

- accelerate/state.py:182-183 take the device from the variable before
  looking at ``cpu``, and ``set_device`` (state.py:823) keeps it, so
  ``PartialState(cpu=True)``, which ``use_cpu=True`` creates, would get
  accinte while transformers puts the batches on the CPU. accelerate documents
  ``cpu=True`` as the CPU whatever the accelerators: the state gets the CPU.
- transformers/training_args.py:1778 refuses ``bf16=True`` unless
  ``is_torch_bf16_gpu_available()`` says yes, and that function
  (transformers/utils/import_utils.py:643) asks only the device types of its
  own list. The name line 1778 calls asks accinte instead when the device
  line 1946 chooses is accinte's. It is replaced where training_args takes it
  from, ``transformers.utils`` (which never imports torch, so it is whole when
  accinte loads), and in training_args itself if that has taken it already;
  training_args is often in the middle of its own import then (it imports
  torch, which loads accinte, before it takes the name), and takes the
  replacement when it does.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from types import ModuleType

import torch

__all__ = ["DEVICE_VARIABLE", "DEFAULT_DEVICE", "on_accelerate_state", "on_bf16_check"]

# The variable both libraries read, and the value it gets when unset.
DEVICE_VARIABLE = "ACCELERATE_TORCH_DEVICE"
DEFAULT_DEVICE = "accinte:0"


# LITERALINCLUDE START: ECOSYSTEM HF DEVICE
def _variable_names_accinte() -> bool:
    return os.environ.get(DEVICE_VARIABLE, "").partition(":")[0] == "accinte"


def on_accelerate_state(state: ModuleType) -> None:
    """Runs once ``accelerate.state`` is imported: the default device, and
    ``PartialState(cpu=True)`` on the CPU (see the module docstring)."""
    accelerator = torch.accelerator.current_accelerator(check_available=True)
    if DEVICE_VARIABLE not in os.environ and accelerator is not None and accelerator.type == "accinte":
        os.environ[DEVICE_VARIABLE] = DEFAULT_DEVICE

    init = state.PartialState.__init__

    @functools.wraps(init)
    def __init__(self, cpu: bool = False, **kwargs) -> None:
        init(self, cpu, **kwargs)
        # With cpu=True only the variable gives an accinte device (state.py:182).
        if self._cpu and self.device.type == "accinte":
            self.device = torch.device("cpu")

    state.PartialState.__init__ = __init__


def on_bf16_check(module: ModuleType) -> None:
    """Runs once ``transformers.utils`` or ``transformers.training_args`` is
    imported: the bf16 check's name there answers for accinte (see the module
    docstring). Nothing happens to a module that has not bound the name yet."""
    global _transformers_answer
    answer = getattr(module, "is_torch_bf16_gpu_available", None)
    if answer is None or answer is _is_torch_bf16_gpu_available:
        return
    _transformers_answer = answer
    module.is_torch_bf16_gpu_available = _is_torch_bf16_gpu_available


_transformers_answer: Callable[[], bool] | None = None


def _is_torch_bf16_gpu_available() -> bool:
    # Line 1946's choice: CUDA if present, else the variable.
    if not torch.cuda.is_available() and _variable_names_accinte():
        return torch.accinte.is_bf16_supported()
    return _transformers_answer()
# LITERALINCLUDE END: ECOSYSTEM HF DEVICE
