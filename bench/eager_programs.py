"""Eager training programs against PyTorch eager (issue 20's program-level measure).

Three programs written as PyTorch's tutorials write them, run unchanged on both libraries (the
module object `m` is `jitorch` or `torch`), one thread everywhere, the same initial weights
(copied from jitorch's model into PyTorch's) and the same data, so the losses agree and the
CPU time per training step is comparable:

- char RNN classifier: the "classifying names with a character-level RNN" tutorial: a
  hand-written RNN (`i2h`, `h2o` Linear layers, LogSoftmax) stepped one character at a time in
  Python, NLLLoss, hand-written SGD;
- BiLSTM-CRF: the "advanced: making dynamic decisions" tutorial's tagger: `nn.LSTM`
  (bidirectional), and a CRF whose forward algorithm and gold-path score are Python loops over
  tags and time steps of tiny tensor ops;
- small CNN: two conv + pool layers and a Linear head on 1x28x28 batches of 32, Adam, trained
  for many steps.

Prints a Markdown table: CPU milliseconds per step (best of rounds, thread CPU time: the machine
is shared), the ratio jitorch / PyTorch, and both final losses. Goal (issue 20): geometric mean
at most 1.3x, none above 2x. Needs PyTorch importable (an optional bench peer):

    PYTHONPATH=src python bench/eager_programs.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import jitorch
from _harness import machine, stamp, try_import
from _torch_twin import copy_weights

torch = try_import("torch")
try:
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
except ImportError:
    pass

LETTERS = 57
CATEGORIES = 18
TAGS = ["B", "I", "O", "<START>", "<STOP>"]


# ---- char RNN classifier (the names tutorial) --------------------------------------------
def char_rnn(m):
    nn = m.nn

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
            self.h2o = nn.Linear(input_size + hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, input, hidden):
            combined = m.cat((input, hidden), 1)
            hidden = self.i2h(combined)
            output = self.softmax(self.h2o(combined))
            return output, hidden

        def init_hidden(self):
            return m.zeros(1, self.hidden_size)

    rng = np.random.default_rng(0)
    names = []
    for _ in range(16):
        n = int(rng.integers(4, 10))
        x = np.zeros((n, 1, LETTERS), np.float32)
        x[np.arange(n), 0, rng.integers(0, LETTERS, n)] = 1
        names.append((m.tensor(x), m.tensor([int(rng.integers(0, CATEGORIES))])))
    model = RNN(LETTERS, 128, CATEGORIES)
    criterion = nn.NLLLoss()
    lr = 0.005

    def step(i):
        line, category = names[i % len(names)]
        hidden = model.init_hidden()
        model.zero_grad()
        for c in range(line.size()[0]):
            output, hidden = model(line[c], hidden)
        loss = criterion(output, category)
        loss.backward()
        with m.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        return loss.item()
    return model, step


# ---- BiLSTM-CRF (the dynamic-decisions tutorial) -------------------------------------------
def bilstm_crf(m):
    nn = m.nn
    tag_to_ix = {t: i for i, t in enumerate(TAGS)}
    start, stop = tag_to_ix["<START>"], tag_to_ix["<STOP>"]

    def argmax(vec):
        _, idx = m.max(vec, 1)
        return idx.item()

    def log_sum_exp(vec):
        max_score = vec[0, argmax(vec)]
        max_score_broadcast = max_score.view(1, -1).expand(1, vec.size()[1])
        return max_score + m.log(m.sum(m.exp(vec - max_score_broadcast)))

    class BiLSTM_CRF(nn.Module):
        def __init__(self, vocab_size, embedding_dim, hidden_dim):
            super().__init__()
            self.tagset_size = len(TAGS)
            self.hidden_dim = hidden_dim
            self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1,
                                bidirectional=True)
            self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
            self.transitions = nn.Parameter(m.randn(self.tagset_size, self.tagset_size))
            self.transitions.data[start, :] = -10000
            self.transitions.data[:, stop] = -10000

        def _forward_alg(self, feats):
            init_alphas = m.full((1, self.tagset_size), -10000.)
            init_alphas[0][start] = 0.
            forward_var = init_alphas
            for feat in feats:
                alphas_t = []
                for next_tag in range(self.tagset_size):
                    emit_score = feat[next_tag].view(1, -1).expand(1, self.tagset_size)
                    trans_score = self.transitions[next_tag].view(1, -1)
                    next_tag_var = forward_var + trans_score + emit_score
                    alphas_t.append(log_sum_exp(next_tag_var).view(1))
                forward_var = m.cat(alphas_t).view(1, -1)
            terminal_var = forward_var + self.transitions[stop]
            return log_sum_exp(terminal_var)

        def _get_lstm_features(self, sentence):
            hidden = (m.zeros(2, 1, self.hidden_dim // 2), m.zeros(2, 1, self.hidden_dim // 2))
            embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
            lstm_out, hidden = self.lstm(embeds, hidden)
            lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
            return self.hidden2tag(lstm_out)

        def _score_sentence(self, feats, tags):
            score = m.zeros(1)
            tags = m.cat([m.tensor([start], dtype=m.long), tags])
            for i, feat in enumerate(feats):
                score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
            return score + self.transitions[stop, tags[-1]]

        def neg_log_likelihood(self, sentence, tags):
            feats = self._get_lstm_features(sentence)
            return self._forward_alg(feats) - self._score_sentence(feats, tags)

    rng = np.random.default_rng(1)
    data = []
    for _ in range(4):
        n = int(rng.integers(6, 12))
        data.append((m.tensor(rng.integers(0, 20, n)), m.tensor(rng.integers(0, 3, n))))
    model = BiLSTM_CRF(20, 5, 4)
    opt = m.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)

    def step(i):
        sentence, tags = data[i % len(data)]
        model.zero_grad()
        loss = model.neg_log_likelihood(sentence, tags)
        loss.backward()
        opt.step()
        return loss.item()
    return model, step


# ---- a small CNN trained for many steps ------------------------------------------------------
def small_cnn(m):
    nn, F = m.nn, m.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3, 1)
            self.conv2 = nn.Conv2d(8, 16, 3, 1)
            self.fc = nn.Linear(16 * 5 * 5, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return F.log_softmax(self.fc(m.flatten(x, 1)), dim=1)

    rng = np.random.default_rng(2)
    batches = [(m.tensor(rng.standard_normal((32, 1, 28, 28)).astype(np.float32)),
                m.tensor(rng.integers(0, 10, 32))) for _ in range(4)]
    model = Net()
    opt = m.optim.Adam(model.parameters(), lr=1e-3)

    def step(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return model, step


PROGRAMS = {"char RNN classifier (names tutorial)": (char_rnn, 16),
            "BiLSTM-CRF (tutorial tagger)": (bilstm_crf, 4),
            "small CNN, Adam, batch 32": (small_cnn, 4)}


def _cpu_per_step(step, steps: int, rounds: int) -> tuple:
    best, last = float("inf"), None
    i = 0
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(steps):
            last = step(i)
            i += 1
        best = min(best, (time.thread_time() - t0) / steps)
    return best, last


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    if torch is None:
        raise SystemExit("bench/eager_programs.py compares against PyTorch: install torch")
    torch.set_num_threads(1)
    print(f"<!-- eager_programs.py -->\n{stamp()} {machine()}, torch {torch.__version__}\n")
    print("| program | jitorch CPU ms/step | PyTorch CPU ms/step | jitorch / PyTorch | loss "
          "after (jitorch, PyTorch) |\n|---|---|---|---|---|")
    ratios = []
    for name, (build, steps) in PROGRAMS.items():
        jitorch.manual_seed(0)
        torch.manual_seed(0)
        jm, jstep = build(jitorch)
        tm, tstep = build(torch)
        copy_weights(torch, jm, tm)
        jstep(0)
        tstep(0)  # first steps: allocations, lazy imports
        j, jl = _cpu_per_step(jstep, steps, args.rounds)
        t, tl = _cpu_per_step(tstep, steps, args.rounds)
        ratios.append(j / t)
        print(f"| {name} | {j * 1e3:.2f} | {t * 1e3:.2f} | {j / t:.2f}x | {jl:.4f}, {tl:.4f} |")
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\nGeometric mean jitorch / PyTorch: {gm:.2f}x (goal <= 1.3x, none above 2x)")


if __name__ == "__main__":
    main()
