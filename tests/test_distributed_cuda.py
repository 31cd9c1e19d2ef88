"""jitorch.distributed on CUDA tensors, in MPI jobs (mpiexec -n 2) on the CUDA simulator with two
devices (JITORCH_CUDA_SIM=1, JITORCH_CUDA_SIM_DEVICES=2): every collective and point-to-point
call on CUDA tensors against NumPy references (a few dtypes, async and not; results written
back into the device tensors, for async_op on wait), mixed-device calls refused with PyTorch's
RuntimeError; DistributedDataParallel of a module split over cuda:0 and cuda:1 and of a
single-device module with `device_ids` against PyTorch's `_test_DDP_niter` oracle (DDP on
per-rank slices equals single-process training on the whole batch, every iteration), and
PyTorch's ValueErrors for device_ids that do not fit the module; FullyShardedDataParallel of CUDA
modules (moved by `device_id`, or already there) against DDP, its shards, gradients and state
dicts on the device or offloaded to the CPU; RPC moving CUDA tensors by device maps (requests by
the caller's map, answers by its inverse) and PyTorch's RuntimeErrors without one."""
from dist_jobs import mpi_job, ok_lines

SIM2 = {"JITORCH_CUDA_SIM": "1", "JITORCH_CUDA_SIM_DEVICES": "2"}

COLLECTIVES = r'''
from datetime import timedelta
import numpy as np
import jitorch
import jitorch.distributed as dist
from jitorch.distributed import ReduceOp

dist.init_process_group("mpi", timeout=timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
assert jitorch.cuda.device_count() == 2
DEV = f"cuda:{r}"  # each rank its own device, as one GPU per rank


def raw(k, shape=(2, 3)):
    return np.arange(int(np.prod(shape))).reshape(shape) * (k + 1) + k


def val(k, dtype, shape=(2, 3), dev=DEV):
    return jitorch.tensor(raw(k, shape)).to(dtype).to(dev)


def host(t):
    return t.cpu().to(jitorch.float64).numpy()


def check(t, want, what, dev=DEV):
    assert t.device == jitorch.device(dev), (what, t.device)
    np.testing.assert_allclose(host(t), want, rtol=1e-6, err_msg=what)


def call(fn, *a, async_op, **kw):
    w = fn(*a, async_op=async_op, **kw)
    if async_op:
        assert isinstance(w, dist.Work) and w.wait() is True and w.is_completed()
    else:
        assert w is None


ALL = np.stack([raw(k) for k in range(n)]).astype(np.float64)
REF = {ReduceOp.SUM: ALL.sum(0), ReduceOp.MAX: ALL.max(0), ReduceOp.MIN: ALL.min(0),
       ReduceOp.AVG: ALL.mean(0)}
cases = [(d, op) for d in (jitorch.float32, jitorch.int64, jitorch.float16)
         for op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX)] + \
        [(jitorch.bfloat16, ReduceOp.MIN), (jitorch.float64, ReduceOp.SUM)]
for i, (d, op) in enumerate(cases):
    want = np.trunc(REF[op]) if op is ReduceOp.AVG and d is jitorch.int64 else REF[op]
    t = val(r, d)
    call(dist.all_reduce, t, op=op, async_op=bool(i % 2))
    assert t.dtype is d
    check(t, want, f"all_reduce {d} {op}")
    t = val(r, d)
    call(dist.reduce, t, dst=1, op=op, async_op=not i % 2)
    check(t, want if r == 1 else raw(r), f"reduce {d} {op}")

# async: the result is written back into the device tensor when the work is waited on
t = val(r, jitorch.float32)
v0 = t._version[0]
w = dist.all_reduce(t, async_op=True)
np.testing.assert_array_equal(host(t), raw(r))  # staged: the device tensor waits for wait()
w.wait()
assert t._version[0] > v0
check(t, REF[ReduceOp.SUM], "async all_reduce")
assert dist.all_reduce(t, async_op=True).get_future().wait()[0] is t

# a non-contiguous CUDA view: the result lands in its elements, the rest of the base is untouched
base = jitorch.full((3, 4), -1.0, device=DEV)
view = base[:, 1::2]
view.copy_(val(r, jitorch.float32, (3, 2)))
dist.all_reduce(view)
check(view, sum(raw(k, (3, 2)) for k in range(n)), "non-contiguous")
assert (base[:, 0::2] == -1).all()

for d, a in ((jitorch.int64, False), (jitorch.bfloat16, True), (jitorch.bool, False)):
    t = val(r, d) if d is not jitorch.bool else jitorch.tensor(raw(r) % 3 == r, device=DEV)
    call(dist.broadcast, t, src=1, async_op=a)
    check(t, raw(1) if d is not jitorch.bool else raw(1) % 3 == 1, f"broadcast {d}")

for d, a in ((jitorch.float32, True), (jitorch.int32, False)):
    outs = [jitorch.zeros(2, 3, dtype=d, device=DEV) for _ in range(n)]
    call(dist.all_gather, outs, val(r, d), async_op=a)
    for k in range(n):
        check(outs[k], raw(k), f"all_gather {d}")
    stacked = jitorch.zeros(n, 2, 3, dtype=d, device=DEV)
    call(dist.all_gather_into_tensor, stacked, val(r, d), async_op=not a)
    check(stacked, ALL, f"all_gather_into_tensor {d}")

    out = jitorch.zeros(2, 3, dtype=d, device=DEV)
    call(dist.reduce_scatter, out, [val(r, d) * (k + 1) for k in range(n)], async_op=a)
    check(out, REF[ReduceOp.SUM] * (r + 1), f"reduce_scatter {d}")
    out = jitorch.zeros(1, 3, dtype=d, device=DEV)
    call(dist.reduce_scatter_tensor, out, val(r, d), op=ReduceOp.MAX, async_op=not a)
    check(out, ALL.max(0)[r:r + 1], f"reduce_scatter_tensor {d}")

    got = [jitorch.zeros(2, 3, dtype=d, device=DEV) for _ in range(n)] if r == 0 else None
    call(dist.gather, val(r, d), got, dst=0, async_op=a)
    if r == 0:
        for k in range(n):
            check(got[k], raw(k), f"gather {d}")
    t = jitorch.zeros(2, 3, dtype=d, device=DEV)
    call(dist.scatter, t, [val(k, d) * 10 for k in range(n)] if r == 1 else None, src=1,
         async_op=not a)
    check(t, raw(r) * 10, f"scatter {d}")

    outs = [jitorch.zeros(2, 3, dtype=d, device=DEV) for _ in range(n)]
    call(dist.all_to_all, outs, [val(r, d) + 100 * k for k in range(n)], async_op=a)
    for k in range(n):
        check(outs[k], raw(k) + 100 * r, f"all_to_all {d}")
    # uneven splits: rank k sends k + 1 rows to each rank
    inp = jitorch.arange(n * (r + 1), dtype=d, device=DEV) + 10 * r
    out = jitorch.zeros(sum(k + 1 for k in range(n)), dtype=d, device=DEV)
    call(dist.all_to_all_single, out, inp, [k + 1 for k in range(n)],
         [r + 1] * n, async_op=not a)
    check(out, np.concatenate([np.arange(k + 1) + r * (k + 1) + 10 * k for k in range(n)]),
          f"all_to_all_single {d}")

# point to point: CUDA to CUDA, and CUDA to CPU (staging makes the other side's device moot)
peer = 1 - r
for d in (jitorch.float32, jitorch.int16):
    if r == 0:
        dist.send(val(0, d), dst=1)
        t = jitorch.zeros(2, 3, dtype=d)  # a CPU tensor receives a CUDA one
        assert dist.recv(t, src=1) == 1
        check(t, raw(1), f"recv into cpu {d}", dev="cpu")
    else:
        t = jitorch.zeros(2, 3, dtype=d, device=DEV)
        assert dist.recv(t) == 0
        check(t, raw(0), f"recv {d}")
        dist.send(val(1, d), dst=0)
    out = jitorch.zeros(2, 3, dtype=d, device=DEV)
    works = [dist.isend(val(r, d), dst=peer), dist.irecv(out, src=peer)]
    for w in works:
        w.wait()
    assert works[1].source_rank() == peer
    check(out, raw(peer), f"isend/irecv {d}")
    out = jitorch.zeros(2, 3, dtype=d, device=DEV)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, val(r, d), peer),
                                     dist.P2POp(dist.irecv, out, peer)]):
        w.wait()
    check(out, raw(peer), f"batch_isend_irecv {d}")

# one device per call, as PyTorch's backends require
cpu, dev = jitorch.zeros(2, 3), val(r, jitorch.float32)
bad = [(dist.all_gather, ([cpu] * n, dev)),
       (dist.all_gather, ([cpu, dev][:n], cpu)),
       (dist.all_gather_into_tensor, (jitorch.zeros(n, 2, 3), dev)),
       (dist.reduce_scatter, (dev, [cpu] * n)),
       (dist.reduce_scatter_tensor, (jitorch.zeros(1, 3), dev)),
       (dist.all_to_all, ([dev] * n, [cpu] * n)),
       (dist.all_to_all_single, (jitorch.zeros(2, 3), val(r, jitorch.float32)))]
for fn, args in bad:
    try:
        fn(*args)
        raise AssertionError(f"{fn.__name__}: expected a RuntimeError")
    except RuntimeError as e:
        assert "Expected list of tensors on the same device" in str(e), str(e)
dist.barrier()
print(f"[OK {r}]")
'''


def test_collectives_and_p2p_on_cuda_tensors(tmp_path):
    p = mpi_job(tmp_path, COLLECTIVES, 2, extra_env=SIM2)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK 0", "OK 1"], p.stdout + p.stderr


DDP = r'''
import numpy as np
import jitorch
import jitorch.distributed as dist
from jitorch import nn
from jitorch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
cuda0, cuda1 = jitorch.device("cuda:0"), jitorch.device("cuda:1")


class Split(nn.Module):
    """A multi-device module: fc1 on d0, fc2 and a buffer on d1, the activations moved between
    them; `unused` (on d0) is never in the loss."""

    def __init__(self, d0, d1):
        super().__init__()
        self.d0, self.d1 = d0, d1
        self.fc1 = nn.Linear(4, 6).to(d0)
        self.fc2 = nn.Linear(6, 3).to(d1)
        self.unused = nn.Linear(2, 2).to(d0)
        self.register_buffer("scale", jitorch.ones(1, device=d1))

    def forward(self, x):
        return self.fc2(jitorch.tanh(self.fc1(x.to(self.d0))).to(self.d1)) * self.scale


def raises(msg, fn):
    try:
        fn()
    except ValueError as e:
        assert msg in str(e), str(e)
        return
    raise AssertionError(f"expected ValueError: {msg}")


# PyTorch's device rules
raises("device_ids can only be None or contain a single element.",
       lambda: DDP(nn.Linear(2, 2).to(cuda0), device_ids=[0, 1]))
raises("DistributedDataParallel's input module must be on the same type of devices, but "
       "input module parameters locate in", lambda: DDP(Split("cpu", cuda0)))
raises("DistributedDataParallel device_ids and output_device arguments only work with "
       "single-device/multiple-device GPU modules or CPU modules, but got device_ids [0], "
       "output_device None, and module parameters",
       lambda: DDP(Split(cuda0, cuda1), device_ids=[0]))
raises("output_device 1", lambda: DDP(Split(cuda0, cuda1), output_device=1))
raises("Expected a non cpu device, but got: cpu",
       lambda: DDP(nn.Linear(2, 2).to(cuda0), device_ids=["cpu"]))

rng = np.random.default_rng(0)
B = 2  # samples per rank
loss_fn = nn.functional.mse_loss


def oracle(ddp, local, steps, where):
    """PyTorch's _test_DDP_niter: DDP on this rank's slice vs `local` on the whole batch."""
    local.load_state_dict(ddp.module.state_dict())
    opt_l = jitorch.optim.SGD(local.parameters(), lr=0.1, fused=False)
    opt_d = jitorch.optim.SGD(ddp.parameters(), lr=0.1, fused=False)
    worst = 0.0
    for _ in range(steps):
        x = jitorch.tensor(rng.standard_normal((B * n, 4)), dtype=jitorch.float32)
        y = jitorch.tensor(rng.standard_normal((B * n, 3)), dtype=jitorch.float32)
        opt_l.zero_grad()
        opt_d.zero_grad()
        loss_fn(local(x), y).backward()
        out = ddp(x[r * B:(r + 1) * B])
        assert out.device == where, out.device
        loss_fn(out, y[r * B:(r + 1) * B].to(out.device)).backward()
        for name, p in ddp.module.named_parameters():
            if name.startswith("unused"):  # unused on every rank: left alone, as PyTorch does
                assert p.grad is None
            else:
                assert p.grad.device == p.device, (p.grad.device, p.device)
        opt_l.step()
        opt_d.step()
        for a, b in zip(local.parameters(), ddp.module.parameters()):
            worst = max(worst, float((a - b.cpu()).abs().max()))
    return worst


# a module split over two devices: device_ids None, buckets per device
jitorch.manual_seed(0)
local = Split("cpu", "cpu")
jitorch.manual_seed(100 + r)  # every rank starts different: DDP broadcasts rank 0's state
mod = Split(cuda0, cuda1)
mod.scale.fill_(r + 2)
# 20-byte buckets: several on each device
ddp = DDP(mod, bucket_cap_mb=0.00002, find_unused_parameters=True,
          gradient_as_bucket_view=True)
assert ddp.device_ids is None and ddp.output_device is None and ddp.device == cuda0
assert mod.scale.device == cuda1 and mod.scale.item() == 2  # rank 0's buffer
local.scale.fill_(2)
assert {b.device for b in ddp._buckets} == {cuda0, cuda1} and len(ddp._buckets) >= 3
for b in ddp._buckets:
    assert all(ddp._params[i].device == b.device for i in b.members)
worst_split = oracle(ddp, local, 3, cuda1)
for b in ddp._buckets:
    assert b.flat.device == b.device

# a single-device module: device_ids=[1] moves the CPU inputs to cuda:1
jitorch.manual_seed(0)
local = nn.Linear(4, 3)
jitorch.manual_seed(200 + r)
ddp = DDP(nn.Linear(4, 3).to(cuda1), device_ids=[jitorch.device("cuda:1")])
assert ddp.device_ids == [1] and ddp.output_device == 1 and ddp.device == cuda1
worst_single = oracle(ddp, local, 2, cuda1)
print(f"[OK {r} {worst_split:.3g} {worst_single:.3g}]")
'''


def test_ddp_on_cuda_modules_matches_single_process_training(tmp_path):
    p = mpi_job(tmp_path, DDP, 2, extra_env=SIM2)
    assert p.returncode == 0, p.stdout + p.stderr
    oks = ok_lines(p)
    assert len(oks) == 2, p.stdout + p.stderr
    assert all(float(x) < 1e-5 for line in oks for x in line.split()[2:]), oks


FSDP = r'''
import functools
import numpy as np
import jitorch
import jitorch.distributed as dist
from jitorch import nn
from jitorch.nn.parallel import DistributedDataParallel as DDP
from jitorch.distributed.fsdp import (FullyShardedDataParallel as FSDP, ShardingStrategy,
                                      StateDictType, FullStateDictConfig)
from jitorch.distributed.fsdp.wrap import transformer_auto_wrap_policy

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
DEV = jitorch.device(f"cuda:{r}")


class Block(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.lin = nn.Linear(a, b)

    def forward(self, x):
        return jitorch.tanh(self.lin(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = Block(5, 7)
        self.head = nn.Linear(7, 3)
        self.register_buffer("shift", jitorch.full((3,), 0.5))

    def forward(self, x):
        return self.head(self.b1(x)) + self.shift


def make(seed=0):
    jitorch.manual_seed(seed)
    return Net()


S = ShardingStrategy
rng = np.random.default_rng(r)
# FULL_SHARD with nested units on a CPU module moved by device_id; SHARD_GRAD_OP on a module
# already on the device, different on each rank: rank 0's values broadcast
for strategy, on_device in ((S.FULL_SHARD, False), (S.SHARD_GRAD_OP, True)):
    seed = 10 + r if on_device else 0
    ddp = DDP(make(seed).to(DEV), device_ids=[r])
    if on_device:
        fsdp = FSDP(make(seed).to(DEV), sharding_strategy=strategy, sync_module_states=True)
    else:
        fsdp = FSDP(make(), sharding_strategy=strategy, device_id=r,
                    auto_wrap_policy=functools.partial(transformer_auto_wrap_policy,
                                                       transformer_layer_cls={Block}))
    assert fsdp.compute_device == DEV and fsdp.module.shift.device == DEV
    assert all(p.device == DEV for p in fsdp.parameters())
    opt_d = jitorch.optim.SGD(ddp.parameters(), lr=0.2, momentum=0.9)
    opt_f = jitorch.optim.SGD(fsdp.parameters(), lr=0.2, momentum=0.9)
    for step in range(2):
        x = jitorch.tensor(rng.standard_normal((4, 5)), dtype=jitorch.float32)  # CPU inputs
        y = jitorch.tensor(rng.standard_normal((4, 3)), dtype=jitorch.float32).to(DEV)
        opt_d.zero_grad()
        opt_f.zero_grad()
        out = fsdp(x)
        assert out.device == DEV, out.device
        if not on_device:  # the nested unit freed its parameters after forward
            assert not hasattr(fsdp.module.b1.module.lin, "weight")
        ld = nn.functional.mse_loss(ddp(x), y)
        lf = nn.functional.mse_loss(out, y)
        ld.backward()
        lf.backward()
        assert all(p.grad.device == DEV for p in fsdp.parameters())
        assert abs(ld.item() - lf.item()) < 1e-5, (strategy, step, ld.item(), lf.item())
        opt_d.step()
        opt_f.step()
    assert all(p.device == DEV for p in fsdp.parameters())
    want = ddp.module.state_dict()
    sd = fsdp.state_dict()  # default config: every rank, tensors on the device
    assert list(sd) == list(want) and all(v.device == DEV for v in sd.values()), sd
    with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
        sd = fsdp.state_dict()
    if r == 0:
        assert list(sd) == list(want), (list(sd), list(want))
        assert all(v.device.type == "cpu" for v in sd.values())
        worst = max(float((sd[k] - want[k].cpu()).abs().max()) for k in want)
        assert worst < 1e-5, (strategy, worst)
    else:
        assert sd == {}, list(sd)
    print(f"[OK fsdp {strategy.name} {r}]")

for bad, exc, msg in (
        (lambda: FSDP(make().to(DEV), device_id=1 - r), ValueError,
         f"Inconsistent compute device and `device_id` on rank {r}: cuda:{r} vs cuda:{1 - r}"),
        (lambda: FSDP(nn.Sequential(nn.Linear(2, 2).to("cuda:0"), nn.Linear(2, 2).to("cuda:1"))),
         RuntimeError, "FSDP only supports single device modules")):
    try:
        bad()
        raise AssertionError(msg)
    except exc as e:
        assert msg in str(e), str(e)
print(f"[OK errors {r}]")
'''


def test_fsdp_on_cuda_modules_matches_ddp(tmp_path):
    p = mpi_job(tmp_path, FSDP, 2, extra_env=SIM2, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == sorted(f"OK {w} {r}" for w in ("fsdp FULL_SHARD", "fsdp SHARD_GRAD_OP",
                                                        "errors") for r in range(2)), p.stdout


RPC = r'''
import jitorch
import jitorch.distributed.rpc as rpc
from mpi4py import MPI

C0, C1 = jitorch.device("cuda:0"), jitorch.device("cuda:1")


def where(x):  # the device the argument arrived on, and a result on that device
    return str(x.device), x * 2


def on_device(i):  # a CUDA tensor made on the callee
    return jitorch.ones(2, device=f"cuda:{i}")


def raises(msg, fn):
    try:
        fn()
    except RuntimeError as e:
        assert msg in str(e), str(e)
        return
    raise AssertionError(f"expected RuntimeError: {msg}")


r = MPI.COMM_WORLD.Get_rank()  # before init_rpc
# maps are checked on every worker in init_rpc (all raise alike), as PyTorch checks them
for bad, msg in (({"worker9": {0: 1}}, "Node worker0 has invalid target node names"),
                 ({"worker1": {7: 1}}, "Node worker0 has source devices with invalid indices "
                                       "in its device map for worker1")):
    try:
        rpc.init_rpc(f"worker{r}", rpc_backend_options=rpc.TensorPipeRpcBackendOptions(
            device_maps=bad if r == 0 else None))
        raise AssertionError(msg)
    except ValueError as e:
        assert msg in str(e), str(e)
opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=2)
if r == 0:  # worker0's cuda:0 is worker1's cuda:1 (and cuda:1 its cuda:0); worker1 maps nothing
    opts.set_device_map("worker1", {0: 1})
    opts.set_device_map("worker1", {"cuda:1": C0})
    try:
        opts.set_device_map("worker1", {0: 0})
        raise AssertionError("a second target for cuda:0")
    except ValueError as e:
        assert "`set_device_map` only supports 1-to-1 mapping" in str(e), str(e)
rpc.init_rpc(f"worker{r}", rank=r, world_size=2, rpc_backend_options=opts)
if r == 0:
    x = jitorch.arange(3.0, device=C0)
    dev, y = rpc.rpc_sync("worker1", where, args=(x,))
    assert dev == "cuda:1" and y.device == C0 and y.tolist() == [0.0, 2.0, 4.0], (dev, y)
    dev, y = rpc.rpc_async("worker1", where, args=(x.to(C1),)).wait()
    assert dev == "cuda:0" and y.device == C1, (dev, y.device)
    rref = rpc.remote("worker1", where, args=(x,))
    dev, y = rref.to_here()
    assert dev == "cuda:1" and y.device == C0, (dev, y.device)
    dev, y = rpc.rpc_sync("worker1", where, args=(jitorch.arange(3.0),))  # CPU stays CPU
    assert dev == "cpu" and y.device.type == "cpu"
    assert rpc.rpc_sync("worker1", on_device, args=(1,)).device == C0
    raises("Response device mapping is not available for destination worker0 for device "
           "cuda:2 but received a tensor on that device.",
           lambda: rpc.rpc_sync("worker1", on_device, args=(2,)))
else:  # no device map: PyTorch's errors, for a request and for an answer
    raises("TensorPipe RPC backend only supports CPU tensors by default, please move your "
           "tensors to CPU before sending them over RPC, or call `set_device_map` on "
           "`TensorPipeRpcBackendOptions` to explicitly configure device mapping. Request "
           "device mapping is not available for destination worker0 for device cuda:1 but "
           "received a tensor on that device.",
           lambda: rpc.rpc_sync("worker0", where, args=(jitorch.ones(2, device=C1),)))
    raises("Request device mapping is not available for destination worker0",
           lambda: rpc.remote("worker0", where, args=({"t": [jitorch.ones(1, device=C0)]},))
           .to_here())
    raises("Response device mapping is not available for destination worker1, but found "
           "tensor on device: cuda:0", lambda: rpc.rpc_sync("worker0", on_device, args=(0,)))
    assert rpc.rpc_sync("worker0", where, args=(jitorch.ones(2),))[0] == "cpu"
rpc.shutdown()
print(f"[OK {r}]")
'''


def test_rpc_moves_cuda_tensors_by_device_maps(tmp_path):
    # three devices: worker1's cuda:2 is in no map
    p = mpi_job(tmp_path, RPC, 2, extra_env=dict(SIM2, JITORCH_CUDA_SIM_DEVICES="3"),
                timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK 0", "OK 1"], p.stdout + p.stderr
