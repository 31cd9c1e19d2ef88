"""DistributedDataParallel against PyTorch's `_test_DDP_niter` oracle (each rank trains a DDP
replica on its slice of the batch and a plain copy on the whole batch: the parameters agree
every iteration), incl. several buckets, `no_sync` accumulation and unused parameters;
DistributedSampler's index assignment; Tensor.register_post_accumulate_grad_hook."""
import sys

import pytest

import jitorch
from jitorch import nn
from jitorch.utils.data import DistributedSampler
from dist_jobs import mpi_job, ok_lines, run

DDP_ORACLE = r'''
import sys
import numpy as np
import jitorch
import jitorch.distributed as dist
from jitorch import nn
from jitorch.nn.parallel import DistributedDataParallel as DDP
from jitorch.utils.data import DistributedSampler

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
sync = sys.argv[1] == "sync"  # "nosync": the all-reduce is skipped, the oracle must notice


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        self.unused = nn.Linear(3, 3)  # never in the loss: find_unused_parameters
        self.register_buffer("steps", jitorch.zeros(1))

    def forward(self, x):
        return self.fc2(jitorch.relu(self.fc1(x)))


jitorch.manual_seed(0)
local = Net()
jitorch.manual_seed(100 + r)  # every rank starts different: DDP broadcasts rank 0's state
mod = Net()
mod.steps.fill_(r + 5)
ddp = DDP(mod, bucket_cap_mb=0.0001, find_unused_parameters=True)  # ~100-byte buckets
assert len(ddp._buckets) >= 2 and ddp.module is mod
assert ddp._buckets[0].members[0] == len(list(mod.parameters())) - 1  # reverse order
assert mod.steps.item() == 5  # rank 0's buffer
assert "module.fc1.weight" in ddp.state_dict()
local.load_state_dict(ddp.module.state_dict())
opt_l = jitorch.optim.SGD(local.parameters(), lr=0.1)
opt_d = jitorch.optim.SGD(ddp.parameters(), lr=0.1)
rng = np.random.default_rng(0)
B = 3  # samples per rank and micro-batch


def batch(k):
    x = jitorch.tensor(rng.standard_normal((k * B * n, 4)), dtype=jitorch.float32)
    y = jitorch.tensor(rng.standard_normal((k * B * n, 3)), dtype=jitorch.float32)
    return x, y


def mine(t, micro=0, micros=1):
    """This rank's slice of micro-batch `micro` (of B * n samples each)."""
    start = micro * B * n + r * B
    return t[start:start + B]


loss_fn = nn.functional.mse_loss
worst = 0.0
for it in range(5):
    opt_l.zero_grad()
    opt_d.zero_grad()
    if it % 2 == 0:  # one step on a batch
        x, y = batch(1)
        loss_fn(local(x), y).backward()
        if sync:
            loss_fn(ddp(mine(x)), mine(y)).backward()
        else:
            with ddp.no_sync():
                loss_fn(ddp(mine(x)), mine(y)).backward()
    else:  # two micro-batches accumulated, the first under no_sync
        x, y = batch(2)
        for m in range(2):
            sl = slice(m * B * n, (m + 1) * B * n)
            loss_fn(local(x[sl]), y[sl]).backward()
        with ddp.no_sync():
            loss_fn(ddp(mine(x, 0)), mine(y, 0)).backward()
        if sync:
            loss_fn(ddp(mine(x, 1)), mine(y, 1)).backward()
        else:
            with ddp.no_sync():
                loss_fn(ddp(mine(x, 1)), mine(y, 1)).backward()
    assert mod.unused.weight.grad is None  # unused on every rank: left alone, as PyTorch does
    opt_l.step()
    opt_d.step()
    for a, b in zip(local.parameters(), mod.parameters()):
        worst = max(worst, float((a - b).abs().max()))
print(f"[OK {r} {worst:.3g}]")

# DistributedSampler with the group's defaults: the ranks' shares cover the dataset
s = DistributedSampler(range(7), shuffle=True, seed=3)
s.set_epoch(2)
shares = [None] * n
dist.all_gather_object(shares, list(s))
assert len(sum(shares, [])) == len(s) * n and set(sum(shares, [])) == set(range(7))
print(f"SAMPLER {r}")
'''


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_matches_single_process_training_every_iteration(tmp_path, n):
    p = mpi_job(tmp_path, DDP_ORACLE, n, "sync")
    assert p.returncode == 0, p.stdout + p.stderr
    oks = ok_lines(p)
    assert len(oks) == n and p.stdout.count("SAMPLER") == n
    assert all(float(line.split()[2]) < 1e-5 for line in oks), oks


def test_ddp_oracle_notices_a_missing_all_reduce(tmp_path):
    # the same training with every backward under no_sync: the replicas diverge from the
    # whole-batch model, so the oracle above would catch a reducer that does nothing
    p = mpi_job(tmp_path, DDP_ORACLE, 2, "nosync")
    assert p.returncode == 0, p.stdout + p.stderr
    assert all(float(line.split()[2]) > 1e-3 for line in ok_lines(p)), p.stdout


ONE_RANK_DDP = r'''
import jitorch
import jitorch.distributed as dist
from jitorch import nn
from jitorch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)

    def forward(self, x):
        return self.a(x)


m = DDP(Two())  # b is unused and find_unused_parameters is off
m(jitorch.ones(1, 2)).sum().backward()
try:
    m(jitorch.ones(1, 2))
    raise AssertionError("expected PyTorch's unfinished-reduction error")
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e)
for bad, exc, msg in ((lambda: DDP(nn.ReLU()), RuntimeError, "doesn't have any parameter"),
                      (lambda: DDP(nn.Linear(2, 2), device_ids=[0]), ValueError,
                       "device_ids and output_device arguments only work"),
                      (lambda: DDP(nn.Linear(2, 2)).join(), NotImplementedError, "join")):
    try:
        bad()
        raise AssertionError(msg)
    except exc as e:
        assert msg in str(e), str(e)
print("[OK]")
'''


def test_ddp_errors_on_one_rank(tmp_path):
    script = tmp_path / "one.py"
    script.write_text(ONE_RANK_DDP)
    p = run([sys.executable, str(script)])
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK"]


def test_distributed_sampler_assigns_indices_as_pytorch():
    # padding repeats the head, then rank r takes every num_replicas-th index from r
    assert [list(DistributedSampler(range(10), 3, r, shuffle=False)) for r in range(3)] == \
        [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert [list(DistributedSampler(range(10), 3, r, shuffle=False, drop_last=True))
            for r in range(3)] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert list(DistributedSampler(range(2), 5, 4, shuffle=False)) == [0]  # padding > len
    samplers = [DistributedSampler(range(11), 4, r, seed=7) for r in range(4)]
    first = [list(s) for s in samplers]
    g = jitorch.Generator().manual_seed(7)
    perm = jitorch.randperm(11, generator=g).tolist()
    assert first == [(perm + perm[:1])[r::4] for r in range(4)]
    for s in samplers:
        s.set_epoch(1)
    assert [list(s) for s in samplers] != first and len(samplers[0]) == 3
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval "
                                         r"\[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    w = nn.Parameter(jitorch.ones(2))
    seen = []
    h = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (w * 3).sum().backward()
    (w * 2).sum().backward()
    assert seen == [[3.0, 3.0], [5.0, 5.0]]
    h.remove()
    (w * 2).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf tensors"):
        (w * 2).register_post_accumulate_grad_hook(lambda p: None)
