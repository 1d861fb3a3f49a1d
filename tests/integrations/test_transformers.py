"""transformers on accinte: tiny random models of each family (no download),
forward, loss, backward, an AdamW step, greedy generation and pipelines,
against the same run on the CPU.

Dropout is off in every config: accinte's generator draws other numbers than
the CPU's (as CUDA's does), so a training-mode dropout would differ by design.
"""

from __future__ import annotations

import pytest
import torch

from .twins import run_both

transformers = pytest.importorskip("transformers")
LIB = "transformers"


def _gpt2(attn):
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=1, attn_implementation=attn))


def _llama(attn):
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=1, attn_implementation=attn))


def _mixtral(attn):
    return transformers.MixtralForCausalLM(transformers.MixtralConfig(
        vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
        num_experts_per_tok=2, max_position_embeddings=64, bos_token_id=0, eos_token_id=1,
        attn_implementation=attn))


def _t5(attn):
    return transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=96, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, dropout_rate=0.0,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, attn_implementation=attn))


CAUSAL = {"gpt2": _gpt2, "llama": _llama, "mixtral": _mixtral}


def _tokens(seed, shape=(2, 8)):
    return torch.randint(2, 96, shape, generator=torch.Generator().manual_seed(seed))


def _train_step(make, inputs):
    """forward + loss + backward + one AdamW step on a seeded model, on ``device``."""
    def fn(device):
        torch.manual_seed(0)
        model = make().to(device)
        batch = {k: v.to(device) for k, v in inputs.items()}
        out = model(**batch)
        out.loss.backward()
        grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
        torch.optim.AdamW(model.parameters(), lr=1e-3).step()
        return {"logits": out.logits, "loss": out.loss, "grads": grads,
                "params": dict(model.named_parameters())}
    return fn


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("family", sorted(CAUSAL))
def test_causal_lm_training_step(family, attn):
    ids = _tokens(1)
    run_both(LIB, f"{family} train step ({attn})",
             _train_step(lambda: CAUSAL[family](attn), {"input_ids": ids, "labels": ids}))


@pytest.mark.parametrize("family", sorted(CAUSAL))
def test_greedy_generate_gives_the_cpus_tokens(family):
    def fn(device):
        torch.manual_seed(0)
        model = CAUSAL[family]("sdpa").to(device).eval()
        return model.generate(_tokens(2, (2, 4)).to(device), max_new_tokens=8, do_sample=False,
                              pad_token_id=0)
    run_both(LIB, f"{family} generate", fn)


def test_bert_classifier_training_step():
    config = transformers.BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    inputs = {"input_ids": _tokens(3), "attention_mask": torch.ones(2, 8, dtype=torch.long),
              "labels": torch.tensor([0, 1])}
    run_both(LIB, "bert train step",
             _train_step(lambda: transformers.BertForSequenceClassification(config), inputs))


def test_t5_seq2seq_training_step():
    inputs = {"input_ids": _tokens(4), "labels": _tokens(5, (2, 6))}
    run_both(LIB, "t5 train step", _train_step(lambda: _t5("eager"), inputs))


def test_vit_image_classifier_training_step():
    config = transformers.ViTConfig(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=64, num_labels=3,
                                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    pixels = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(6))
    run_both(LIB, "vit train step",
             _train_step(lambda: transformers.ViTForImageClassification(config),
                         {"pixel_values": pixels, "labels": torch.tensor([0, 2])}))


def test_pipeline_under_inference_mode():
    """pipeline() runs its model under torch.inference_mode()."""
    tokenizer = _tokenizer()

    def fn(device):
        torch.manual_seed(0)
        model = _gpt2("sdpa").eval()
        pipe = transformers.pipeline("feature-extraction", model=model, tokenizer=tokenizer,
                                     device=device)
        return torch.tensor(pipe("one two three four"))
    run_both(LIB, "pipeline (inference mode)", fn)


def _tokenizer():
    """A word-level tokenizer over a tiny vocabulary, built here (no download)."""
    tokenizers = pytest.importorskip("tokenizers")
    words = ["[PAD]", "[UNK]", "one", "two", "three", "four", "five", "six"]
    model = tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]")
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]",
                                                unk_token="[UNK]")
