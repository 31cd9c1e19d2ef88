"""Data-parallel training with `DistributedDataParallel` on `jitorch.distributed` (MPI).

Each rank builds the same MLP, wraps it in DDP (which broadcasts rank 0's weights), reads its
own share of the data through a `DistributedSampler` and trains; backward averages the
gradients over the ranks, so the replicas stay identical. The data set is generated here (two
interleaved moons in the plane, no download). Rank 0 prints one line per epoch (the loss
averaged over the ranks with `all_reduce`) and the final accuracy; at the end the ranks check
that their weights agree and rank 0 saves a checkpoint, from which a restarted job resumes.

    python -m jitorch.distributed.run --nproc-per-node 2 examples/ddp_train.py [--epochs 20]
    mpiexec -n 2 python examples/ddp_train.py          # the same, with MPI's own launcher
    python examples/ddp_train.py                        # one rank
    # several machines (the same venv path on each), 2 ranks per host:
    python -m jitorch.distributed.run --hostfile hosts --nproc-per-node 2 examples/ddp_train.py
"""
import argparse
import math
import os

import numpy as np

import jitorch
import jitorch.distributed as dist
import jitorch.nn.functional as F
from jitorch import nn, optim
from jitorch.nn.parallel import DistributedDataParallel as DDP
from jitorch.utils.data import DataLoader, DistributedSampler, TensorDataset


def moons(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    t = rng.uniform(0, math.pi, n)
    x = np.stack([np.cos(t) + y, np.sin(t) * (1 - 2 * y) + 0.5 * y], 1)
    x += 0.1 * rng.standard_normal((n, 2))
    return (jitorch.from_numpy(x.astype(np.float32)), jitorch.from_numpy(y.astype(np.int64)))


def main(epochs: int = 20, points: int = 1024, batch_size: int = 32, checkpoint=None) -> float:
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    jitorch.manual_seed(rank)  # the replicas start different: DDP makes them rank 0's
    model = DDP(nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2)))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    start = 0
    if checkpoint and os.path.exists(checkpoint):  # a restarted job resumes here
        state = jitorch.load(checkpoint)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"]
    x, y = moons(points)
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=batch_size, sampler=sampler)
    for epoch in range(start, epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        total = jitorch.zeros(2, dtype=jitorch.float64)
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()  # gradients averaged over the ranks here
            opt.step()
            total += jitorch.tensor([loss.item() * len(yb), len(yb)], dtype=jitorch.float64)
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch + 1:3d}  loss {total[0].item() / total[1].item():.4f}")
            if checkpoint:
                jitorch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                              "epoch": epoch + 1}, checkpoint)
        dist.barrier()  # the checkpoint is written before any rank can fail and restart
    with jitorch.no_grad():
        acc = (model(x).argmax(1) == y).double().mean().item()
    # every replica holds rank 0's weights
    flat = jitorch.cat([p.detach().reshape(-1) for p in model.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, src=0)
    assert jitorch.equal(flat, ref), "the replicas diverged"
    if rank == 0:
        print(f"{world} rank(s): accuracy {acc:.3f}; the replicas agree")
    dist.destroy_process_group()
    return acc


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--points", type=int, default=1024)
    p.add_argument("--checkpoint", default=None, help="save each epoch here; resume from it")
    a = p.parse_args()
    main(a.epochs, a.points, checkpoint=a.checkpoint)
