"""diffusers on accinte: a tiny UNet with cross-attention blocks (GroupNorm,
attention, up/down sampling), a denoising training step."""

from __future__ import annotations

import pytest
import torch

from .twins import run_both

diffusers = pytest.importorskip("diffusers")
LIB = "diffusers"


def test_unet_with_attention_training_step():
    g = torch.Generator().manual_seed(0)
    sample = torch.randn(2, 4, 16, 16, generator=g)
    context = torch.randn(2, 6, 16, generator=g)
    target = torch.randn(2, 4, 16, 16, generator=g)

    def fn(device):
        torch.manual_seed(0)
        unet = diffusers.UNet2DConditionModel(
            sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
            block_out_channels=(32, 64), norm_num_groups=8, cross_attention_dim=16,
            attention_head_dim=8,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D")).to(device)
        out = unet(sample.to(device), torch.tensor([10, 500], device=device),
                   encoder_hidden_states=context.to(device)).sample
        loss = torch.nn.functional.mse_loss(out, target.to(device))
        loss.backward()
        return {"out": out, "loss": loss,
                "grads": {n: p.grad for n, p in unet.named_parameters() if p.grad is not None}}
    run_both(LIB, "UNet2DCondition train step", fn)


def test_unet_channels_last_inference():
    """Channels-last activations (a common diffusers setting) through GroupNorm."""
    sample = torch.randn(1, 4, 16, 16, generator=torch.Generator().manual_seed(1))

    def fn(device):
        torch.manual_seed(0)
        unet = diffusers.UNet2DModel(sample_size=16, in_channels=4, out_channels=4,
                                     layers_per_block=1, block_out_channels=(32, 64),
                                     norm_num_groups=8,
                                     down_block_types=("AttnDownBlock2D", "DownBlock2D"),
                                     up_block_types=("UpBlock2D", "AttnUpBlock2D"))
        unet = unet.to(device, memory_format=torch.channels_last).eval()
        with torch.inference_mode():
            return unet(sample.to(device).to(memory_format=torch.channels_last), 3).sample
    run_both(LIB, "UNet2D channels-last inference", fn)


def test_vidtok_downsample_bfloat16():
    """VidTok's temporal downsampling pools with avg_pool3d in bfloat16, which
    the CPU's kernel refuses: diffusers casts to float itself only when the
    device is "cpu" (autoencoder_vidtok.py) and takes CUDA's path on accinte,
    where accinte computes in float as CUDA does (Note [accinte low precision
    as CUDA]): the same bits as diffusers' own CPU workaround."""
    from diffusers.models.autoencoders.autoencoder_vidtok import VidTokDownsample3D

    x = torch.randn(1, 4, 5, 6, 6, generator=torch.Generator().manual_seed(2))

    def fn(device):
        torch.manual_seed(0)
        block = VidTokDownsample3D(4, 4).to(device, torch.bfloat16)
        with torch.no_grad():
            return block(x.to(device, torch.bfloat16))
    run_both(LIB, "VidTok downsample (bf16 avg_pool3d)", fn)
