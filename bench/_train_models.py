"""The models of bench/train_step.py and bench/encoder_infer.py, written once for both backends.

`load(backend)` executes this file as a fresh module whose global `torch` is `backend` (jitorch
or PyTorch) *before* the classes are defined, so the same source text builds jitorch.nn and
torch.nn models (and `@jitorch.script` compiles the very source PyTorch runs). Imported plainly,
`torch` is jitorch.

Models (the issue-4 train-step set):
- MLP 784-256-128-10 (nn.Sequential of Linear/ReLU);
- CNN Conv2d(1,8,3,p=1)-ReLU-MaxPool2d(2)-Conv2d(8,16,3,p=1)-ReLU-MaxPool2d(2)-Flatten-
  Linear(784,10) on 1x28x28 inputs;
- the character LSTM of examples/train_char_lstm.py (its `CharLSTM` class for jitorch; the
  PyTorch twin `CharLSTMTwin` below has the same parameter names and the same time loop);
- an nn.LSTM language model (Embedding-LSTM-Linear) with the same sizes;
- a 2-layer nn.TransformerEncoder (d_model 64, nhead 4, ff 128, dropout 0, batch_first) with a
  mean-pool and a Linear head.
`WithLoss` wraps a model and its cross-entropy loss into one module, which is what a scripted
train step compiles (forward and loss in one program, backward through autodiff).
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np

if "torch" not in globals():  # imported plainly (not through `load`): the jitorch backend
    import jitorch as torch

nn = torch.nn
F = torch.nn.functional

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"


class WithLoss(nn.Module):
    """model(x) -> cross entropy against integer targets y; logits flattened to (N, classes)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        out = self.model(x)
        return F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))


def mlp():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(784, 10))


class LSTMLM(nn.Module):
    """Character language model over nn.LSTM: idx (T, B) int64 -> logits (T, B, vocab)."""

    def __init__(self, vocab: int, embed: int = 16, hidden: int = 64):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx):
        out, _ = self.lstm(self.embed(idx))
        return self.head(out)


class EncoderClassifier(nn.Module):
    """2-layer Transformer encoder, mean over the sequence, Linear head: (B, T, d) -> (B, C)."""

    def __init__(self, d_model: int = 64, nhead: int = 4, ff: int = 128, layers: int = 2,
                 classes: int = 10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def encoder(d_model: int = 64, nhead: int = 4, ff: int = 128, layers: int = 2):
    layer = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


# --- the character LSTM: the example's class for jitorch, this twin for PyTorch ----------------
def lstm_seq_twin(x, w_ih, b_ih, w_hh, b_hh, h, c):
    """examples/train_char_lstm.py's `lstm_seq_eager`, line for line."""
    hs = torch.zeros(x.size(0), h.size(0), h.size(1))
    for t in range(x.size(0)):
        gates = x[t] @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh
        i, f, g, o = gates.chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs[t] = h
    return hs, h, c


class CharLSTMTwin(nn.Module):
    """examples/train_char_lstm.py's `CharLSTM` (same parameter names, same loop)."""

    def __init__(self, vocab: int, embed: int = 16, hidden: int = 64):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Parameter(0.1 * torch.randn(vocab, embed))
        self.ih = nn.Linear(embed, 4 * hidden)
        self.hh = nn.Linear(hidden, 4 * hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx, state=None, scripted: bool = False):
        b = idx.size(1)
        if state is None:
            state = (torch.zeros(b, self.hidden), torch.zeros(b, self.hidden))
        hs, h, c = lstm_seq_twin(self.embed[idx], self.ih.weight, self.ih.bias, self.hh.weight,
                                 self.hh.bias, *state)
        return self.head(hs), (h, c)


def char_example():
    """examples/train_char_lstm.py as a module (jitorch only): CharLSTM, load_text, batches."""
    name = "_bench_train_char_lstm"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "train_char_lstm.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # inspect.getsource looks the module up by name
        spec.loader.exec_module(mod)
    return sys.modules[name]


def char_data(seq: int = 32, batch: int = 16, seed: int = 0):
    """(vocab size, inputs (T, B) int64, targets (T, B) int64) as NumPy, from the example's text."""
    ex = char_example()
    _, chars, data = ex.load_text()
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(data) - seq - 1, batch)
    win = np.stack([data[s:s + seq + 1] for s in starts], 1)
    return len(chars), win[:-1].copy(), win[1:].copy()


# --- moving weights and data between backends -------------------------------------------------
def to_numpy_state(model) -> dict:
    return {k: np.array(v.detach().numpy(), copy=True) for k, v in model.state_dict().items()}


def load_numpy_state(model, state: dict) -> None:
    """Copies a NumPy state dict into `model` (strict: names and shapes must match)."""
    model.load_state_dict({k: torch.from_numpy(np.array(v, copy=True)) for k, v in state.items()})


def load(backend, name: str):
    """This file as a fresh module named `name` whose `torch` is `backend`."""
    spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__))
    mod = importlib.util.module_from_spec(spec)
    mod.torch = backend
    sys.modules[name] = mod  # inspect.getsource / TorchScript look modules up by name
    spec.loader.exec_module(mod)
    return mod
