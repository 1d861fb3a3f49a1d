"""What CUDA accepts and the CPU refuses, found from PyTorch's own tables.

Libraries take their GPU code paths on any accelerator (Note [accinte CUDA
parity] in csrc/emulation/shims/Histc.cpp), so everything CUDA accepts and the
CPU's kernels refuse is a candidate for an accinte kernel. Two sources list
them, both shipped with the installed torch, so the search needs no GPU and a
new PyTorch is searched again by running this module:

- dtypes: every OpInfo of op_db declares the dtypes of its CPU kernel
  (`dtypes`) and of its CUDA kernel (`dtypesIf["cuda"]`). For each dtype only
  CUDA declares, the OpInfo's first sample is cast to it and run on the CPU;
  the pair is a candidate if the CPU refuses it (an OpInfo's list can be
  narrower than its kernel's).
- backward dtypes: the same for `backward_dtypes` and
  `backward_dtypesIf["cuda"]`, the sample's backward run on the CPU.
- operators: native_functions.yaml (torchgen/packaged) names each operator's
  kernels by dispatch key; the CPU wheel registers no CUDA kernel, so the file,
  not the dispatcher, says which operators have a CUDA kernel and neither a
  CPU kernel nor a composite one.

`TRIAGE` records what accinte does about each candidate and why (the evidence
of which library reaches it is in docs/chapters/operators.md, "What CUDA
accepts and the CPU refuses"); test_cuda_capabilities.py fails when a
candidate is not triaged or a triage entry matches nothing.
`python -m tests.conformance.cuda_capabilities` prints the three lists.
"""

from __future__ import annotations

import os
import re
import warnings

import torch
import torchgen
import yaml

from .dtype_refusals import _base_dtype, _call, _cast
from .opinfo_runner import op_db, op_key
from .samples import sample_inputs

_NATIVE_FUNCTIONS = os.path.join(os.path.dirname(torchgen.__file__),
                                 "packaged", "ATen", "native", "native_functions.yaml")
_CPU_OR_COMPOSITE = {"CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd",
                     "CompositeExplicitAutogradNonFunctional"}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_candidates() -> dict[str, str]:
    """`"op dtype"` -> the CPU's refusal, for each dtype an OpInfo declares
    for CUDA and not for the CPU, and that the CPU refuses."""
    found = {}
    for op in op_db:
        only_cuda = set(op.dtypesIf["cuda"]) - set(op.dtypes)
        if not only_cuda:
            continue
        base = _base_dtype(op)
        if base is None:  # an OpInfo of an operator only CUDA runs
            found[f"{op_key(op)} (CUDA only)"] = "declares no CPU dtype"
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sample = next(sample_inputs(op, "cpu", base))
        for dtype in sorted(only_cuda, key=str):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcome = _call(op, _cast(sample, base, dtype), "cpu")
            if outcome.raised is not None:
                found[f"{op_key(op)} {_dtype_name(dtype)}"] = outcome.describe()
    return found


def backward_candidates() -> dict[str, str]:
    """`"op dtype backward"` -> the CPU's refusal, for each dtype an OpInfo
    declares for CUDA's backward and not for the CPU's (forward dtypes only
    CUDA has are in `dtype_candidates`), and whose backward the CPU refuses."""
    found = {}
    for op in op_db:
        if not op.supports_autograd:
            continue
        only_cuda = (set(op.backward_dtypesIfCUDA) - set(op.backward_dtypes)
                     - (set(op.dtypesIf["cuda"]) - set(op.dtypes)))
        for dtype in sorted(only_cuda, key=str):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sample = next(sample_inputs(op, "cpu", dtype, requires_grad=True))
                    result = op(sample.input, *sample.args, **sample.kwargs)
                    outputs = [t for t in (result if isinstance(result, (tuple, list)) else [result])
                               if isinstance(t, torch.Tensor) and t.requires_grad]
                    torch.autograd.backward([t.abs().sum() if t.is_complex() else t.sum()
                                             for t in outputs])
            except Exception as error:  # noqa: BLE001 — the refusal is the result
                found[f"{op_key(op)} {_dtype_name(dtype)} backward"] = f"{type(error).__name__}: {error}"
    return found


def dispatch_candidates() -> list[str]:
    """Overload names (`"batch_norm_stats"`, `"mm.dtype"`) whose entry in
    native_functions.yaml has a CUDA kernel and no CPU or composite one."""
    with open(_NATIVE_FUNCTIONS) as f:
        entries = yaml.safe_load(f)
    found = []
    for entry in entries:
        keys = {key.strip() for spec in entry.get("dispatch", {}) for key in spec.split(",")}
        if "CUDA" in keys and not keys & _CPU_OR_COMPOSITE:
            found.append(entry["func"].split("(")[0])
    return found


# What accinte does about each candidate: a regular expression over the
# candidate's name, the decision, and the reason. "kernel" = accinte has a
# kernel of its own (test_cuda_capabilities.py checks that it runs,
# tests/test_cuda_parity.py what it computes).
TRIAGE: list[tuple[str, str, str]] = [
    # dtypes
    (r"histc (u?int\d+)", "kernel",
     "transformers' MoE counts tokens per expert with integer histc (Histc.cpp)"),
    (r"nn\.functional\.avg_pool3d (float16|bfloat16)", "kernel",
     "diffusers' video autoencoders and transformers, torchmetrics' 3-D SSIM (LowPrecision.cpp)"),
    (r"_upsample_bilinear2d_aa (float16|bfloat16)", "kernel",
     "transformers' SAM2/SAM3 video trackers and VideoPrism resize with antialias (LowPrecision.cpp)"),
    (r".* complex32( backward)?", "not reached",
     "no library computes in complex32; diffusers upcasts before its FFTs"),
    (r"fft\.\w+ float16", "not reached",
     "diffusers' FreeU, FreeInit and FasterCache cast to float32 before the FFT"),
    (r"nn\.functional\.(multi_margin_loss|multilabel_margin_loss) (float16|bfloat16)",
     "not reached", "no library calls these losses"),
    (r"nn\.functional\.rrelu float16", "not reached", "no library calls rrelu"),
    (r"(abs|trace|nn\.functional\.softsign) bool", "not reached",
     "nothing takes the absolute value or trace of a mask"),
    (r"(nanmean|nansum) complex(64|128)", "not reached",
     "torchmetrics' nanmean and nansum are over real tensors"),
    (r"torch\.ops\.aten\._(flash|efficient)_attention_forward \(CUDA only\)", "not reached",
     "CUDA's attention backends; accinte answers SDPA with the overrideable backend"),
    (r"nn\.functional\.batch_norm\.without_cudnn \(CUDA only\)", "not reached",
     "an OpInfo variant that only turns cuDNN off; batch_norm itself runs the CPU's kernel"),
    # operators
    (r"batch_norm_(stats|elemt(\.out)?|gather_stats(_with_counts)?|backward_reduce|backward_elemt)",
     "kernel", "nn.SyncBatchNorm on 2+ processes (DDP, Lightning sync_batchnorm=True) (SyncBatchNorm.cpp)"),
    (r"(_use)?_?cudnn_(?!attention)\w+(\.\w+)?|(_use_)?miopen_\w+(\.\w+)?",
     "not reached", "called only where PyTorch chose cuDNN or MIOpen for a CUDA tensor"),
    (r"_(fused_dropout|masked_scale)", "not reached",
     "legacy dropout kernels; dropout calls native_dropout, which accinte has"),
    (r"(mm|bmm|addmm|baddbmm)\.dtype(_out)?", "not reached",
     "out_dtype matmul: transformers' Kolibri1 router guards it with is_cuda"),
    (r"_cslt_\w+|_sparse_semi_structured_\w+|_to_sparse_semi_structured|_mixed_dtypes_linear",
     "not reached", "cuSPARSELt and CUTLASS kernels for 2:4 sparsity, called only by torchao"),
    (r"_convert_weight_to_int4pack|_weight_int4pack_mm", "not reached",
     "no installed library calls them (torchao's int4 path, not installed)"),
    (r"_scaled_grouped_mm(_v2)?", "not reached",
     "FP8 grouped GEMM; no installed library calls it (transformers' MoE calls _grouped_mm, "
     "composite in 2.13)"),
    (r"_philox_\w+", "not reached", "Inductor's CUDA RNG functionalization"),
    (r"_fused_rms_norm_backward", "not reached",
     "rms_norm's backward is composite off CUDA and XPU"),
    (r"_thnn_fused_(lstm|gru)_cell(_backward(_impl)?)?", "kernel",
     "ATen's LSTM and GRU call them on any accelerator (Rnn.cpp, tests/test_models.py)"),
    (r"_conv_depthwise2d(\.out)?|conv_depthwise3d", "not reached",
     "chosen by PyTorch's convolution for CUDA only; accinte overrides convolution"),
    (r"record_stream", "kernel", "Tensor.record_stream (RecordStream.cpp)"),
    (r"_scaled_dot_product_\w+(\.quantized)?|_flash_attention_\w+(\.quantized)?|"
     r"_efficient_attention_\w+|_cudnn_attention_\w+|_triton_\w+|_fill_mem_eff_dropout_mask_",
     "not reached", "CUDA's attention backends; accinte answers SDPA with the overrideable backend"),
]


def triage(candidate: str) -> tuple[str, str] | None:
    """(decision, reason) of the one TRIAGE entry matching `candidate`."""
    hits = [(d, r) for pattern, d, r in TRIAGE if re.fullmatch(pattern, candidate)]
    return hits[0] if len(hits) == 1 else None


def main() -> None:
    for title, names in (("dtypes", list(dtype_candidates())),
                         ("backward dtypes", list(backward_candidates())),
                         ("operators", dispatch_candidates())):
        print(f"{title}: {len(names)} candidates")
        for name in names:
            decision = triage(name)
            print(f"  {name}: {decision[0] + ' - ' + decision[1] if decision else 'NOT TRIAGED'}")


if __name__ == "__main__":
    main()
