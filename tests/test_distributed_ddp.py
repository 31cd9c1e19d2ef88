"""DistributedDataParallel against PyTorch's `_test_DDP_niter` oracle (each rank trains a DDP
replica on its slice of the batch and a plain copy on the whole batch: the parameters agree
every iteration), incl. several buckets, `no_sync` accumulation and unused parameters;
uneven inputs under `join()` against the same reference, `throw_on_early_termination`,
overlapped reductions equal to unoverlapped ones bit for bit, `gradient_as_bucket_view`, the
communication hooks; DistributedSampler's index assignment;
Tensor.register_post_accumulate_grad_hook."""
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


DDP_FEATURES = r'''
from datetime import timedelta
import numpy as np
import jitorch
import jitorch.distributed as dist
from jitorch import nn
from jitorch.nn.parallel import DistributedDataParallel as DDP
from jitorch.distributed.algorithms import Join
from jitorch.distributed.algorithms.ddp_comm_hooks import default_hooks

dist.init_process_group("mpi", timeout=timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
B = 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        self.register_buffer("scale", jitorch.ones(1))

    def forward(self, x):
        return self.fc2(jitorch.relu(self.fc1(x))) * self.scale


def data(steps, seed=0):
    rng = np.random.default_rng(seed)
    return [[(jitorch.tensor(rng.standard_normal((B, 4)), dtype=jitorch.float32),
              jitorch.tensor(rng.standard_normal((B, 3)), dtype=jitorch.float32))
             for _ in range(steps[k])] for k in range(n)]


mse = nn.functional.mse_loss


def fresh(**kw):
    jitorch.manual_seed(0)
    local = Net()
    jitorch.manual_seed(10 + r)
    return local, DDP(Net(), bucket_cap_mb=0.0001, **kw)


# 1. uneven inputs: rank k has 2 + k batches; DDP under join() == the reference on one process
for divide in (True, False):
    for unused in (False, True):
        steps = [2 + k for k in range(n)]
        batches = data(steps)
        local, ddp = fresh(find_unused_parameters=unused)
        local.load_state_dict(ddp.module.state_dict())
        opt_l = jitorch.optim.SGD(local.parameters(), lr=0.1)
        opt_d = jitorch.optim.SGD(ddp.parameters(), lr=0.1)
        for k in range(max(steps)):
            active = [q for q in range(n) if k < steps[q]]
            opt_l.zero_grad()
            loss = sum(mse(local(batches[q][k][0]), batches[q][k][1]) for q in active)
            (loss / (n if divide else len(active))).backward()
            opt_l.step()
        with ddp.join(divide_by_initial_world_size=divide):
            for x, y in batches[r]:
                opt_d.zero_grad()
                mse(ddp(x), y).backward()
                opt_d.step()
        worst = max(float((a - b).abs().max()) for a, b in
                    zip(local.parameters(), ddp.module.parameters()))
        assert worst < 1e-5, (divide, unused, worst)
print(f"[OK join {r}]")

# 2. throw_on_early_termination: every rank raises once rank 0 runs out
local, ddp = fresh()
try:
    with ddp.join(throw_on_early_termination=True):
        for x, y in data([1 + k for k in range(n)])[r]:
            mse(ddp(x), y).backward()
    raise AssertionError("expected RuntimeError")
except RuntimeError as e:
    want = ("Rank 0 exhausted all inputs." if r == 0 else
            "Detected at least one rank that exhausted inputs. Throwing across all ranks.")
    assert str(e) == want, str(e)
dist.barrier()
print(f"[OK throw {r}]")

# 3. overlap on == off bit for bit; gradient_as_bucket_view grads are views of the buckets;
#    comm hooks: allreduce_hook ~ default, fp16_compress_hook close; GradBucket and Future API
seen = []


def spy(state, bucket):
    seen.append((bucket.index(), bucket.is_last(), len(bucket.parameters()),
                 bucket.buffer().numel()))
    return default_hooks.allreduce_hook(state, bucket).then(lambda f: f.value())


variants = {"on": {}, "off": {"overlap_comm": False}, "view": {"gradient_as_bucket_view": True},
            "allreduce": {}, "fp16": {}, "spy": {}}
models = {}
for name, kw in variants.items():
    models[name] = fresh(**kw)[1]
models["allreduce"].register_comm_hook(None, default_hooks.allreduce_hook)
models["fp16"].register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
models["spy"].register_comm_hook(None, spy)
assert models["on"]._overlapping() and not models["off"]._overlapping()
import jitorch.nn.parallel.distributed as ddp_impl
handed = []  # reductions handed to the progress thread (all buckets but the last, per model)
to_thread = ddp_impl.progress_in_background
ddp_impl.progress_in_background = lambda *a: handed.append(a) or to_thread(*a)
opts = {k: jitorch.optim.SGD(m.parameters(), lr=0.1) for k, m in models.items()}
batches = data([4] * n, seed=1)[r]
nb = len(models["on"]._buckets)
for x, y in batches:
    for k, m in models.items():
        opts[k].zero_grad()
        mse(m(x), y).backward()
    g = {k: [p.grad.numpy().copy() for p in m.parameters()] for k, m in models.items()}
    assert all(np.array_equal(a, b) for a, b in zip(g["on"], g["off"]))
    assert all(np.array_equal(a, b) for a, b in zip(g["on"], g["view"]))
    for k, tol in (("allreduce", 1e-6), ("spy", 1e-6), ("fp16", 2e-3)):
        assert all(np.allclose(a, b, atol=tol) for a, b in zip(g["on"], g[k])), k
    v = models["view"]
    for i, p in enumerate(v._params):
        flat = v._buckets[v._where[i][0]].flat
        lo = flat.data_ptr()
        assert lo <= p.grad.data_ptr() < lo + flat.numel() * 4, i
    for k in opts:
        opts[k].step()
assert seen[:nb] == [(i, i == nb - 1, len(b.members), b.numel)
                     for i, b in enumerate(models["on"]._buckets)], seen
assert len(seen) == 4 * nb
assert len(handed) == 4 * (nb - 1) * (len(models) - 1), len(handed)
print(f"[OK overlap {r} {nb}]")
'''


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_join_overlap_bucket_views_and_comm_hooks(tmp_path, n):
    # join(): rank k has 2 + k batches; every rank ends on the model of single-process training
    # where iteration i averages the still-active ranks' losses (over n, or over the active
    # count with divide_by_initial_world_size=False), with and without find_unused_parameters
    p = mpi_job(tmp_path, DDP_FEATURES, n, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    oks = ok_lines(p)
    assert [o for o in oks if o.startswith("OK join")] == [f"OK join {r}" for r in range(n)]
    assert len([o for o in oks if o.startswith("OK throw")]) == n
    assert [o for o in oks if o.startswith("OK overlap")] == [f"OK overlap {r} 2"
                                                              for r in range(n)]


ONE_RANK_DDP = r'''
import jitorch
import jitorch.distributed as dist
from jitorch import nn
from jitorch.nn.parallel import DistributedDataParallel as DDP
from jitorch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

dist.init_process_group("mpi")


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)

    def forward(self, x):
        return self.a(x)


m = DDP(Two())  # b is unused and find_unused_parameters is off
m.register_comm_hook(None, allreduce_hook)
m(jitorch.ones(1, 2)).sum().backward()
try:
    m(jitorch.ones(1, 2))
    raise AssertionError("expected PyTorch's unfinished-reduction error")
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e)
for bad, exc, msg in ((lambda: DDP(nn.ReLU()), RuntimeError, "doesn't have any parameter"),
                      (lambda: DDP(nn.Linear(2, 2), device_ids=[0]), ValueError,
                       "device_ids and output_device arguments only work"),
                      (lambda: m.register_comm_hook(None, allreduce_hook), RuntimeError,
                       "register_comm_hook or register_builtin_comm_hook can only be called "
                       "once"),
                      (lambda: DDP(nn.Linear(2, 2)).register_comm_hook(None, 3), TypeError,
                       "Communication hook must be callable")):
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


def test_future_chains_callbacks_and_failures():
    from jitorch.futures import Future, collect_all
    f = Future()
    order = []
    child = f.then(lambda p: p.value() * 2)
    f.add_done_callback(lambda p: order.append(p.value()))
    assert not child.done()
    f.set_result(3)
    assert child.done() and child.wait() == 6 and child.value() == 6 and order == [3]
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        f.set_result(4)
    bad = Future()
    chained = bad.then(lambda p: p.value() + 1)  # the callback sees the failure via value()
    bad.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        chained.wait()
    assert collect_all([f, child]).wait() == [f, child]
    with pytest.raises(RuntimeError, match="not been marked completed"):
        Future().value()


DDP_SCRIPTED = r'''
import numpy as np
import jitorch
import jitorch.distributed as dist
from jitorch import nn
from jitorch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(jitorch.relu(self.fc1(x)))


class Outer(nn.Module):  # an eager module around a scripted submodule
    def __init__(self):
        super().__init__()
        self.inner = Net()
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.inner(x))


def scripted_whole(m):
    return jitorch.jit.script(m)


def scripted_inner(m):
    m.inner = jitorch.jit.script(m.inner)
    return m


for make, wrap, out in ((Net, scripted_whole, 3), (Outer, scripted_inner, 2)):
    jitorch.manual_seed(r)  # ranks start different: DDP broadcasts rank 0's parameters
    eager = make()
    twin = make()
    twin.load_state_dict(eager.state_dict())
    ddps = [DDP(eager), DDP(wrap(twin))]
    opts = [jitorch.optim.SGD(d.parameters(), lr=0.1) for d in ddps]
    rng = np.random.default_rng(r)  # each rank its own data: only the all-reduce keeps them equal
    before = jitorch.jit.stats()
    for _ in range(3):
        x = jitorch.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
        y = jitorch.from_numpy(rng.standard_normal((5, out)).astype(np.float32))
        for d, o in zip(ddps, opts):
            o.zero_grad()
            ((d(x) - y) ** 2).mean().backward()
            o.step()
    st = jitorch.jit.stats()
    assert st.compiled_runs > before.compiled_runs, st
    assert st.interpreted_runs == before.interpreted_runs and not st.interpreted_reasons, st
    flat = [jitorch.cat([p.detach().reshape(-1) for p in d.parameters()]) for d in ddps]
    assert jitorch.allclose(flat[0], flat[1], atol=1e-6), (flat[0] - flat[1]).abs().max()
    everyone = [jitorch.zeros_like(flat[1]) for _ in range(n)]
    dist.all_gather(everyone, flat[1])
    assert all(jitorch.equal(e, flat[1]) for e in everyone), "the replicas diverged"
    print(f"[OK {make.__name__} {r}]")
'''


def test_ddp_around_scripted_modules_trains_compiled_and_matches_eager(tmp_path):
    p = mpi_job(tmp_path, DDP_SCRIPTED, 2, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK Net 0", "OK Net 1", "OK Outer 0", "OK Outer 1"], p.stdout
