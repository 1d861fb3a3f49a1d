"""accinte gives the CPU's exact answer: inference mode, fused attention,
normalisation layers, quantized tensors and integer histograms.

    python examples/cpu_exact.py
"""

import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")


def same_bits(device_tensor, cpu_tensor):
    return torch.equal(device_tensor.cpu().reshape(-1).view(torch.uint8),
                       cpu_tensor.reshape(-1).view(torch.uint8))


torch.manual_seed(0)
q, k, v = (torch.randn(2, 4, 16, 32) for _ in range(3))
x = torch.randn(2, 16, 32)

# 1. Kernels run on the stream's worker with the caller's thread state.
with torch.inference_mode():
    embedding = torch.randn(10, 32)
    ids = torch.tensor([[1, 4, 9], [0, 2, 2]])
    out = F.embedding(ids.to("accinte"), embedding.to("accinte"))
    assert out.is_inference() and same_bits(out, F.embedding(ids, embedding))
print("torch.inference_mode() works on accinte")

# 2. scaled_dot_product_attention takes the fused (overrideable) backend,
#    which runs the CPU's flash attention: the CPU's bits, forward and backward.
print("fused SDP choice on accinte:", torch._fused_sdp_choice(*(t.to("accinte") for t in (q, k, v))))
cpu_in = [t.clone().requires_grad_() for t in (q, k, v)]
dev_in = [t.to("accinte").requires_grad_() for t in (q, k, v)]
cpu_out = F.scaled_dot_product_attention(*cpu_in, is_causal=True)
dev_out = F.scaled_dot_product_attention(*dev_in, is_causal=True)
cpu_out.sum().backward()
dev_out.sum().backward()
assert same_bits(dev_out, cpu_out)
assert all(same_bits(d.grad, c.grad) for d, c in zip(dev_in, cpu_in))
print("fused attention matches the CPU bit for bit")

# 3. layer_norm runs the CPU's fused kernel, not a decomposition.
assert same_bits(F.layer_norm(x.to("accinte"), (32,)), F.layer_norm(x, (32,)))
print("layer_norm matches the CPU bit for bit")

# 4. Quantized tensors live on accinte.
qx = torch.quantize_per_tensor(x.to("accinte"), 0.05, 0, torch.qint8)
assert qx.is_quantized and qx.device.type == "accinte"
assert torch.equal(qx.int_repr().cpu(), torch.quantize_per_tensor(x, 0.05, 0, torch.qint8).int_repr())
print("quantized tensor on accinte:", qx.dtype, "scale", qx.q_scale())

# 5. What CUDA accepts and the CPU refuses: integer histc (Mixtral's MoE).
experts = torch.randint(0, 8, (32,))
counts = torch.histc(experts.to("accinte"), bins=8, min=0, max=7)
assert counts.cpu().tolist() == torch.bincount(experts, minlength=8).tolist()
print("integer histc counts tokens per expert:", counts.cpu().tolist())
print("accinte gives the CPU's exact answers")
