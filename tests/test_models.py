"""Models train on accinte as on the CPU: same losses, gradients, parameters.

Each model is built on the CPU under a fixed seed and copied to accinte, so
both start from the same weights; the CPU's results are the oracle (see
model_helpers.py for the tolerances).
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from held_stream import hold_stream
from model_helpers import (DEVICE, assert_close, assert_same_grads, assert_same_parameters, to,
                           train_both, twin)


def batches_of(count: int, make, seed: int = 0):
    """`count` (inputs, target) pairs made by `make(generator)` on the CPU."""
    g = torch.Generator().manual_seed(seed)
    return [make(g) for _ in range(count)]


def mse(model, x, y):
    return F.mse_loss(model(x), y)


def cross_entropy(model, x, y):
    return F.cross_entropy(model(x), y)


# --- MLP -------------------------------------------------------------------

def make_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 1))


def test_mlp_training_matches_cpu():
    batches = batches_of(4, lambda g: (torch.randn(32, 16, generator=g),
                                       torch.randn(32, 1, generator=g)))
    train_both(make_mlp(), batches, mse, rtol=0, atol=0)  # the CPU's bits


# --- CNN with batch norm ---------------------------------------------------

def make_cnn():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def image_batches(count=3):
    return batches_of(count, lambda g: (torch.randn(8, 3, 12, 12, generator=g) * 2 + 0.5,
                                        torch.randint(0, 10, (8,), generator=g)))


def test_cnn_batch_norm_training_matches_cpu():
    dev, cpu = train_both(make_cnn(), image_batches(), cross_entropy, rtol=0, atol=0)
    # train_both compared every buffer; the running statistics must have moved.
    bn = cpu[1]
    assert bn.num_batches_tracked.item() == 3
    assert not torch.allclose(bn.running_mean, torch.zeros(8))
    assert_close(dev[1].running_var, bn.running_var)


def test_cnn_batch_norm_eval_mode_uses_running_stats():
    # Train a little so the running statistics are not the initial ones.
    dev, cpu = train_both(make_cnn(), image_batches(2), cross_entropy)
    dev.eval().zero_grad()
    cpu.eval().zero_grad()
    x, y = image_batches(1)[0]
    running = [b.clone() for b in cpu.buffers()]
    out_cpu = cpu(x)
    out_dev = dev(x.to(DEVICE))
    assert_close(out_dev, out_cpu)
    # Eval mode normalises with the running statistics, not the batch's.
    assert not torch.allclose(out_cpu, copy.deepcopy(cpu).train()(x), atol=1e-3)
    F.cross_entropy(out_dev, y.to(DEVICE)).backward()
    F.cross_entropy(out_cpu, y).backward()
    assert_same_grads(dev, cpu)
    # ... and does not update them.
    for before, after_cpu, after_dev in zip(running, cpu.buffers(), dev.buffers()):
        assert torch.equal(after_cpu, before)
        assert_close(after_dev, before)
    with torch.no_grad():
        assert_close(dev(x.to(DEVICE)), cpu(x))


# --- LSTM ------------------------------------------------------------------

class Tagger(nn.Module):
    """A two-layer bidirectional LSTM with a linear head per time step."""

    def __init__(self, packed: bool):
        super().__init__()
        self.packed = packed
        self.lstm = nn.LSTM(input_size=6, hidden_size=12, num_layers=2, bidirectional=True,
                            batch_first=True)
        self.head = nn.Linear(24, 3)

    def forward(self, inputs):
        x, lengths = inputs
        if not self.packed:
            out, (h, c) = self.lstm(x)
        else:
            # Lengths stay on the CPU, as pack_padded_sequence requires.
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                          enforce_sorted=False)
            out, (h, c) = self.lstm(packed)
            out, out_lengths = pad_packed_sequence(out, batch_first=True,
                                                   total_length=x.shape[1])
            assert out_lengths.tolist() == lengths.tolist()
        assert h.shape == c.shape == (4, x.shape[0], 12)
        # The last layer's final states (forward, backward) join every step;
        # c is not used, so its gradient reaches the cell undefined.
        final = torch.cat([h[-2], h[-1]], dim=-1).unsqueeze(1)
        return self.head(out + final)


def sequence_batches(count=3):
    def make(g):
        x = torch.randn(5, 7, 6, generator=g)
        lengths = torch.tensor([7, 3, 5, 1, 6])
        mask = torch.arange(7) < lengths.unsqueeze(1)
        x = x * mask.unsqueeze(-1)  # padding is zero
        return (x, lengths), (torch.randint(0, 3, (5, 7), generator=g), mask)
    return batches_of(count, make)


def tagging_loss(model, inputs, target):
    labels, mask = target
    logits = model(inputs)
    return F.cross_entropy(logits[mask], labels[mask])


def test_lstm_training_matches_cpu():
    torch.manual_seed(0)
    train_both(Tagger(packed=False), sequence_batches(), tagging_loss)


def test_lstm_packed_sequences_training_matches_cpu():
    torch.manual_seed(0)
    train_both(Tagger(packed=True), sequence_batches(), tagging_loss)


def test_lstm_initial_state_and_packed_outputs():
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 5, num_layers=2, bidirectional=True)
    dev = twin(lstm)
    x = torch.randn(6, 3, 4)  # (time, batch, features)
    h0, c0 = torch.randn(4, 3, 5), torch.randn(4, 3, 5)
    packed = pack_padded_sequence(x, torch.tensor([6, 4, 2]))
    out_cpu, (h_cpu, c_cpu) = lstm(packed, (h0, c0))
    out_dev, (h_dev, c_dev) = dev(packed.to(DEVICE), (h0.to(DEVICE), c0.to(DEVICE)))
    assert out_dev.data.device.type == DEVICE
    assert torch.equal(out_dev.batch_sizes, out_cpu.batch_sizes)
    assert_close(out_dev.data, out_cpu.data)
    assert_close(h_dev, h_cpu)
    assert_close(c_dev, c_cpu)
    (out_cpu.data.sum() + h_cpu.square().sum()).backward()
    (out_dev.data.sum() + h_dev.square().sum()).backward()
    assert_same_grads(dev, lstm)


class GRUTagger(nn.Module):
    """A two-layer bidirectional GRU over packed sequences."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(input_size=6, hidden_size=10, num_layers=2, bidirectional=True,
                          batch_first=True)
        self.head = nn.Linear(20, 3)

    def forward(self, inputs):
        x, lengths = inputs
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return self.head(out + torch.cat([h[-2], h[-1]], dim=-1).unsqueeze(1))


def test_gru_packed_sequences_training_matches_cpu():
    torch.manual_seed(0)
    train_both(GRUTagger(), sequence_batches(), tagging_loss)


@pytest.mark.parametrize("cell", ["LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_cells_match_cpu(cell, bias):
    torch.manual_seed(0)
    cpu = getattr(nn, cell)(5, 7, bias=bias)
    dev = twin(cpu)
    xs, h0 = torch.randn(3, 4, 5), torch.randn(4, 7)

    def unroll(m, device):
        h = to(h0, device)
        state = (h, h * 0.5) if cell == "LSTMCell" else h
        outs = []
        for x in xs:
            state = m(x.to(device), state)
            outs.append(state[0] if cell == "LSTMCell" else state)
        return torch.stack(outs)

    out_cpu, out_dev = unroll(cpu, "cpu"), unroll(dev, DEVICE)
    assert_close(out_dev, out_cpu)
    out_cpu.tanh().sum().backward()
    out_dev.tanh().sum().backward()
    assert_same_grads(dev, cpu)


# --- Transformer encoder ---------------------------------------------------

def make_encoder(dropout: float):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32,
                                       dropout=dropout, batch_first=True)
    return Encoder(layer)


class Encoder(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 4)

    def forward(self, x, padding_mask=None):
        return self.head(self.encoder(x, src_key_padding_mask=padding_mask))


def encoder_batches(count=3):
    return batches_of(count, lambda g: (torch.randn(4, 6, 16, generator=g),
                                        torch.randn(4, 6, 4, generator=g)))


def test_transformer_encoder_training_matches_cpu():
    train_both(make_encoder(dropout=0.0), encoder_batches(), mse, rtol=0, atol=0)


def test_transformer_encoder_with_padding_mask_matches_cpu():
    mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2,
                         [False] * 2 + [True] * 4, [False] * 5 + [True]])

    def masked_mse(model, x, y):
        keep = ~mask.to(x.device)
        return F.mse_loss(model(x, mask.to(x.device))[keep], y[keep])

    train_both(make_encoder(dropout=0.0), encoder_batches(), masked_mse, rtol=0, atol=0)


def test_transformer_encoder_inference_fast_path_matches_cpu():
    # In eval mode without grad, TransformerEncoderLayer takes its fused
    # "fast path" (torch._transformer_encoder_layer_fwd) on accinte too.
    cpu = make_encoder(dropout=0.0).eval()
    dev = twin(cpu)
    x = encoder_batches(1)[0][0]
    with torch.no_grad():
        assert_close(dev(x.to(DEVICE)), cpu(x))


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_transformer_encoder_nested_tensor_fast_path_matches_cpu():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0,
                                       batch_first=True)
    cpu = nn.TransformerEncoder(layer, num_layers=2).eval()  # enable_nested_tensor=True
    dev = twin(cpu)
    x = encoder_batches(1)[0][0]
    mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2,
                         [False] * 2 + [True] * 4, [False] * 5 + [True]])
    with torch.no_grad():
        expected = cpu(x, src_key_padding_mask=mask)
        got = dev(x.to(DEVICE), src_key_padding_mask=mask.to(DEVICE))
    assert_close(got, expected)


def test_transformer_encoder_dropout_is_reproducible_on_accinte():
    # Dropout draws from accinte's own generator, whose stream is not the
    # CPU's, so accinte is compared with itself under the same seed.
    model = make_encoder(dropout=0.2)
    batches = encoder_batches()

    def run(seed):
        torch.accinte.manual_seed(seed)
        m = twin(model)
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        losses, grads = [], None
        for x, y in batches:
            opt.zero_grad()
            loss = mse(m, x.to(DEVICE), y.to(DEVICE))
            loss.backward()
            if grads is None:
                grads = {n: p.grad.cpu() for n, p in m.named_parameters()}
            opt.step()
            losses.append(loss.detach().cpu())
        return torch.stack(losses), grads, m

    losses_a, grads_a, model_a = run(1)
    losses_b, grads_b, model_b = run(1)
    assert torch.equal(losses_a, losses_b)
    for name, g in grads_a.items():
        assert torch.equal(grads_b[name], g), name
    assert_same_parameters(model_a, model_b, rtol=0, atol=0)
    losses_c, _, _ = run(2)
    assert not torch.equal(losses_a, losses_c)  # another seed drops other units

    # Without dropout (same weights, eval mode) the first loss is different.
    x, y = batches[0]
    no_dropout = twin(model).eval()
    loss_no_dropout = mse(no_dropout, x.to(DEVICE), y.to(DEVICE)).detach().cpu()
    assert not torch.allclose(loss_no_dropout, losses_a[0])
    zero_p = make_encoder(dropout=0.0)
    assert_close(mse(twin(zero_p), x.to(DEVICE), y.to(DEVICE)), loss_no_dropout)


# --- a small GPT-style decoder --------------------------------------------

class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        # No bias: the key bias has a gradient of exactly zero in theory
        # (softmax ignores a constant added to every key's score), so its
        # computed gradient is rounding noise, which Adam scales up to full
        # steps of size lr; comparing that noise across devices proves nothing.
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=29, context=12, dim=32, heads=4, layers=2):
        super().__init__()
        self.context = context
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(context, dim)
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(layers)))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tokens(idx) + self.positions(torch.arange(t, device=idx.device))
        return self.head(self.ln(self.blocks(x)))


def make_gpt():
    torch.manual_seed(0)
    return GPT()


def lm_loss(model, idx, _):
    logits = model(idx[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1), idx[:, 1:].flatten())


def text_batches(count=4):
    # A learnable "language": each sequence counts up modulo the vocabulary.
    def make(g):
        start = torch.randint(0, 29, (6, 1), generator=g)
        return (start + torch.arange(12)) % 29, None
    return batches_of(count, make)


@torch.no_grad()
def generate(model, idx, tokens: int):
    for _ in range(tokens):
        logits = model(idx[:, -model.context:])
        idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return idx


def test_gpt_training_matches_cpu():
    def adamw(params):
        return torch.optim.AdamW(params, lr=3e-3)

    dev, cpu = train_both(make_gpt(), text_batches(), lm_loss, make_optimizer=adamw, rtol=0, atol=0)
    assert dev.head.weight is dev.tokens.weight  # still tied after .to()


def test_gpt_greedy_generation_matches_cpu():
    def adamw(params):
        return torch.optim.AdamW(params, lr=1e-2)

    dev, cpu = train_both(make_gpt(), text_batches(6), lm_loss, make_optimizer=adamw, rtol=0,
                          atol=0)
    dev.eval()
    cpu.eval()
    prompt = torch.tensor([[3, 4, 5], [20, 21, 22]])
    out_cpu = generate(cpu, prompt, 16)  # longer than the context: the window slides
    out_dev = generate(dev, prompt.to(DEVICE), 16)
    assert out_dev.device.type == DEVICE
    assert out_dev.cpu().tolist() == out_cpu.tolist()
    assert len(set(out_cpu[0, 3:].tolist())) > 1  # not one token repeated


# --- moving models to accinte ---------------------------------------------

def test_module_to_keeps_parameters_and_tied_weights():
    # As on CUDA, .to() moves a module's parameters in place (`param.data =`),
    # so Parameter objects survive: weights tied across modules stay tied,
    # and an optimizer made before the move steps the moved parameters.
    torch.manual_seed(0)
    emb, head = nn.Embedding(10, 4), nn.Linear(4, 10, bias=False)
    head.weight = emb.weight
    model = nn.Sequential(emb, head)
    weight = emb.weight
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to(DEVICE)
    assert emb.weight is weight and head.weight is weight
    assert weight.device.type == DEVICE and weight.requires_grad and weight.is_leaf
    model(torch.tensor([1, 2, 3], device=DEVICE)).sum().backward()
    before = weight.detach().cpu()
    opt.step()
    assert not torch.equal(weight.detach().cpu(), before)
    model.to("cpu")
    assert emb.weight is weight and weight.device.type == "cpu"

    t = torch.zeros(3, requires_grad=True)
    t.data = torch.ones(3, device=DEVICE)
    assert t.device.type == DEVICE and t.requires_grad
    assert torch._has_compatible_shallow_copy_type(torch.zeros(1), torch.zeros(1, device=DEVICE))
    assert torch._has_compatible_shallow_copy_type(torch.zeros(1, device=DEVICE), torch.zeros(1))


# --- asynchronous training steps ------------------------------------------

def step(model, opt, loss_fn, x, y):
    """One training step, as written for any device."""
    opt.zero_grad()
    loss = loss_fn(model, x, y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    return loss.detach()


def step_is_queued(model, make_optimizer, loss_fn, batch) -> bool:
    """Runs a step behind a held stream (held_stream.py); True when every call
    of the step returned while the stream was still held (no call waited for
    the device). Also checks that the step's loss and parameters match the
    CPU's."""
    cpu = copy.deepcopy(model)
    dev = twin(model)
    opt, cpu_opt = make_optimizer(dev.parameters()), make_optimizer(cpu.parameters())
    x, y = batch
    xd, yd = to(x, DEVICE), to(y, DEVICE)
    step(dev, opt, loss_fn, xd, yd)  # the first step creates the optimizer state
    step(cpu, cpu_opt, loss_fn, x, y)
    torch.accinte.synchronize()

    with hold_stream() as hold:
        loss = step(dev, opt, loss_fn, xd, yd)
        queued = hold.held()
    expected = step(cpu, cpu_opt, loss_fn, x, y)
    assert math.isclose(loss.item(), expected.item(), rel_tol=1e-4)  # .item() waits
    assert_same_parameters(dev, cpu)
    return queued


def make_tanh_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Sigmoid(),
                         nn.Linear(32, 1))


def squared_error(model, x, y):
    return (model(x) - y).square().mean()


OPTIMIZERS = {
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "adam-foreach": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True),
    "adam-fused": lambda p: torch.optim.Adam(p, lr=1e-2, fused=True),
    "adamw-for-loop": lambda p: torch.optim.AdamW(p, lr=1e-2, foreach=False),
}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_training_step_is_queued_asynchronously(optimizer):
    # A whole step (forward, loss, backward, gradient clipping, optimizer) is
    # queued behind a held stream: every call returns while it is held. Only
    # .item() waits.
    batch = (torch.randn(32, 16), torch.randn(32, 1))
    assert step_is_queued(make_tanh_mlp(), OPTIMIZERS[optimizer], squared_error, batch)


# Whole training steps of the standard models are queued without waiting,
# after a first step that records every call signature
# (csrc/emulation/fallback/LaunchCache.h), convolutions included (queued by
# native/Extra.cpp).
TRAINING_STEPS = {
    "mlp-relu-mse": (make_mlp, mse, lambda: (torch.randn(32, 16), torch.randn(32, 1)), None),
    "cnn": (make_cnn, cross_entropy, lambda: image_batches(1)[0], None),
    "transformer-encoder": (lambda: make_encoder(0.0), mse, lambda: encoder_batches(1)[0], None),
    # torch.arange(t, device=...) grows an empty tensor: its zero-fill is
    # queued (Note [accinte storage growth]).
    "gpt": (make_gpt, lm_loss, lambda: text_batches(1)[0], None),
}


@pytest.mark.parametrize("model", [
    pytest.param(name, marks=[pytest.mark.xfail(reason=reason, strict=True)] if reason else [])
    for name, (*_, reason) in TRAINING_STEPS.items()])
def test_model_training_step_is_queued_asynchronously(model):
    make, loss_fn, batch, _ = TRAINING_STEPS[model]
    assert step_is_queued(make(), OPTIMIZERS["sgd-momentum"], loss_fn, batch())
