"""A deep MLP trained with activation checkpointing (`torch.utils.checkpoint`), as memory-bound
PyTorch users write it: `checkpoint_sequential` over the blocks in training, and a plain twin
run from the same weights and seed to show the gradients are the same (dropout draws the same
masks in the recomputation). Weights and data come from NumPy's seeded generator, so with
`--dropout 0` a run is the same numbers on PyTorch and on jitorch. The only change to run it
on jitorch is the import line."""
import argparse
import copy

import numpy as np

import jitorch as torch
import jitorch.nn as nn
from jitorch.utils.checkpoint import checkpoint, checkpoint_sequential


def make_model(depth, width, dropout, rng):
    layers = [nn.Linear(8, width), nn.Tanh()]
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.Tanh(), nn.Dropout(dropout)]
    layers.append(nn.Linear(width, 1))
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.randn(*p.shape).astype(np.float32)
                                 / np.sqrt(p.shape[-1])))
    return model


def train(model, data, steps, lr, seed, segments):
    x, y = data
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    torch.manual_seed(seed)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        if segments:
            # the first block through checkpoint(), the rest through checkpoint_sequential()
            h = checkpoint(model[0], x, use_reentrant=False)
            out = checkpoint_sequential(model[1:], segments, h, use_reentrant=False)
        else:
            out = model(x)
        loss = nn.functional.mse_loss(out.view(-1), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--depth', type=int, default=8)
    parser.add_argument('--width', type=int, default=32)
    parser.add_argument('--segments', type=int, default=4)
    parser.add_argument('--dropout', type=float, default=0.1)
    parser.add_argument('--steps', type=int, default=30)
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--compare-plain', action='store_true')
    opt = parser.parse_args(argv)
    rng = np.random.RandomState(0)
    x = rng.randn(128, 8).astype(np.float32)
    y = (np.sin(x[:, 0]) + x[:, 1] * x[:, 2]).astype(np.float32)
    data = torch.tensor(x), torch.tensor(y)
    model = make_model(opt.depth, opt.width, opt.dropout, rng)
    twin = copy.deepcopy(model)
    out = {"losses": train(model, data, opt.steps, opt.lr, 1, opt.segments)}
    if opt.compare_plain:
        out["plain_losses"] = train(twin, data, opt.steps, opt.lr, 1, 0)
    return out


if __name__ == '__main__':
    res = main(["--compare-plain"])
    print(f"loss {res['losses'][0]:.4f} -> {res['losses'][-1]:.4f}; plain run "
          f"{res['plain_losses'][-1]:.4f}")
