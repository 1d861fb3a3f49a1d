"""peft on accinte: a LoRA adapter on a tiny Llama, trained one AdamW step,
then merged into the base weights."""

from __future__ import annotations

import pytest
import torch

from .twins import run_both

peft = pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")
LIB = "peft"


def test_lora_training_step_and_merge():
    ids = torch.randint(2, 96, (2, 8), generator=torch.Generator().manual_seed(0))

    def fn(device):
        torch.manual_seed(0)
        base = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32))
        config = peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                 target_modules=["q_proj", "v_proj"], init_lora_weights="gaussian")
        model = peft.get_peft_model(base, config).to(device)
        trainable = [p for p in model.parameters() if p.requires_grad]
        assert trainable and all(p.device.type == device for p in trainable)
        loss = model(input_ids=ids.to(device), labels=ids.to(device)).loss
        loss.backward()
        torch.optim.AdamW(trainable, lr=1e-2).step()
        merged = model.merge_and_unload()
        return {"loss": loss, "merged": {n: p.detach() for n, p in merged.named_parameters()}}
    run_both(LIB, "LoRA step + merge", fn)
