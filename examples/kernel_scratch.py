"""Where an emulated kernel's temporaries live. accinte runs the CPU's kernels
on a stream's worker thread, and the scratch buffers they allocate there
(flash attention's, here) come from a cache the emulator keeps, as a GPU
kernel's workspace comes from device memory the caching allocator keeps:
a warm training step maps no new pages, and the results are the CPU's bits.
"""

import resource
import statistics

import torch
import torch.nn.functional as F
import torch_accinte


def attention_step(device):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(4, 8, 256, 64, generator=g).to(device).requires_grad_()
               for _ in range(3))

    def step():
        q.grad = k.grad = v.grad = None
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.sum().backward()
        torch.accelerator.synchronize()
        return out, q.grad, k.grad, v.grad

    return step


step = attention_step("accinte")
step()  # makes the kernels' scratch blocks
faults = []  # per step: the median leaves out a step that grew the device's pool
for _ in range(7):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    results = step()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
faults = statistics.median(faults)
stats = torch_accinte._C._kernel_scratch_stats()
print(f"page faults in a warm step (median of 7): {faults:.0f}")
print(f"scratch cache: {stats['cached_bytes'] / 2**20:.1f} MiB kept, "
      f"{stats['hits']} allocations served, {stats['misses']} made")
assert faults < 100, "the kernels mapped their scratch afresh"
assert stats["hits"] >= 7 * 6  # seven scratch blocks a step

for got, want in zip(results, attention_step("cpu")()):
    assert torch.equal(got.cpu(), want)
print("kernels reuse their scratch memory and give the CPU's bits")
