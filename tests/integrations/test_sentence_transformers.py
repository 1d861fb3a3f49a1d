"""sentence-transformers on accinte: ``encode()`` (which runs under
inference mode) of a tiny BERT saved here, with its own word-level tokenizer."""

from __future__ import annotations

import pytest
import torch

from .twins import run_both

st = pytest.importorskip("sentence_transformers")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
LIB = "sentence-transformers"

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "a", "dog", "ran"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-bert")
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(
        {w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
        sep_token="[SEP]", model_max_length=32)
    torch.manual_seed(0)
    bert = transformers.BertModel(transformers.BertConfig(
        vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=32))
    bert.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def test_encode(model_dir):
    sentences = ["the cat sat on the mat", "a dog ran", "the dog sat"]

    def fn(device):
        # A plain transformers checkpoint: sentence-transformers adds mean pooling.
        model = st.SentenceTransformer(str(model_dir), device=device)
        assert model.device.type == device
        return model.encode(sentences, convert_to_tensor=True, batch_size=2)
    run_both(LIB, "encode()", fn)
