"""jitorch.distributed's process groups and collectives: real MPI jobs (mpiexec -n 3, and a
1-rank job under plain python) checked against NumPy references, plus the faults: a stalled
rank makes the others raise DistBackendError and the job end, a rank that raises ends the job."""
import sys

import pytest

import jitorch.distributed as dist
from dist_jobs import mpi_job, ok_lines, run

COLLECTIVES = r'''
import pickle
from datetime import timedelta
import numpy as np
import jitorch
import jitorch.distributed as dist
from jitorch.distributed import ReduceOp

dist.init_process_group("mpi", timeout=timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and dist.get_backend() == "mpi" and dist.group.WORLD is not None


def raw(rank, shape=(2, 3)):
    return np.arange(int(np.prod(shape))).reshape(shape) * (rank + 1) + rank


def val(rank, dtype, shape=(2, 3)):
    a = raw(rank, shape)
    if dtype is jitorch.bool:
        return jitorch.tensor(a % 3 == 0)
    return jitorch.tensor(a).to(dtype)


def as64(t):
    return t.to(jitorch.complex128 if t.is_complex() else jitorch.float64).numpy() \
        if t.dtype is not jitorch.bool else t.numpy()


NP = {ReduceOp.SUM: np.sum, ReduceOp.PRODUCT: np.prod, ReduceOp.MIN: np.min,
      ReduceOp.MAX: np.max, ReduceOp.AVG: np.mean,
      ReduceOp.BAND: np.bitwise_and.reduce, ReduceOp.BOR: np.bitwise_or.reduce,
      ReduceOp.BXOR: np.bitwise_xor.reduce}


def expected(op, dtype, shape=(2, 3)):
    allv = np.stack([as64(val(k, dtype, shape)) if dtype is not jitorch.bool
                     else val(k, dtype, shape).numpy() for k in range(n)])
    if dtype is jitorch.bool:
        return allv.any(0) if op in (ReduceOp.SUM, ReduceOp.MAX) else allv.all(0)
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR):
        return NP[op](allv.astype(np.int64), axis=0)
    out = NP[op](allv, axis=0)
    if op is ReduceOp.AVG and not (val(0, dtype).is_floating_point() or
                                   val(0, dtype).is_complex()):
        out = np.trunc(out)
    return out


def check(t, want, what):
    np.testing.assert_allclose(as64(t), want, rtol=1e-6, err_msg=what)


def call(fn, *a, async_op, **kw):
    w = fn(*a, async_op=async_op, **kw)
    if async_op:
        assert isinstance(w, dist.Work) and w.wait() is True and w.is_completed()
    else:
        assert w is None
    return w


cases = [(d, op) for d in (jitorch.float32, jitorch.float64, jitorch.int32, jitorch.int64,
                           jitorch.int8, jitorch.bfloat16, jitorch.float16)
         for op in (ReduceOp.SUM, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG)]
cases += [(d, ReduceOp.PRODUCT) for d in (jitorch.float32, jitorch.float64, jitorch.int64)]
cases += [(d, op) for d in (jitorch.uint8, jitorch.int64)
          for op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)]
cases += [(jitorch.bool, ReduceOp.SUM), (jitorch.bool, ReduceOp.MIN),
          (jitorch.complex64, ReduceOp.SUM), (jitorch.complex128, ReduceOp.AVG)]
for i, (d, op) in enumerate(cases):
    t = val(r, d)
    call(dist.all_reduce, t, op=op, async_op=bool(i % 2))
    check(t, expected(op, d), f"all_reduce {d} {op}")
    t = val(r, d)
    call(dist.reduce, t, dst=1, op=op, async_op=bool(i % 2))
    check(t, expected(op, d) if r == 1 else as64(val(r, d)), f"reduce {d} {op}")

# a non-contiguous tensor: the result lands in its elements, the rest of the base is untouched
base = jitorch.full((3, 4), -1.0)
view = base[:, 1::2]
view.copy_(val(r, jitorch.float32, (3, 2)))
dist.all_reduce(view)
check(view, expected(ReduceOp.SUM, jitorch.float32, (3, 2)), "non-contiguous")
assert (base[:, 0::2] == -1).all()

# blocking calls of 256 KB and more wait in MPI's blocking call under the watchdog
# (distributed/_work.py): the same results, for each kind of staging
big = (8, 1 << 15)
for d, op in ((jitorch.float32, ReduceOp.SUM), (jitorch.float64, ReduceOp.AVG),
              (jitorch.int64, ReduceOp.MAX), (jitorch.bool, ReduceOp.SUM),
              (jitorch.complex64, ReduceOp.SUM)):
    t = val(r, d, big)
    v0 = t._version[0]
    dist.all_reduce(t, op=op)
    check(t, expected(op, d, big), f"large all_reduce {d} {op}")
    assert t._version[0] == v0 + 1
t = jitorch.tensor(raw(r, big) % 5).to(jitorch.float16)  # staged in float32, written back
dist.all_reduce(t)
np.testing.assert_array_equal(t.to(jitorch.float64).numpy(),
                              sum(raw(k, big) % 5 for k in range(n)), "large float16")
base = jitorch.full((8, 1 << 16), -1.0)
view = base[:, 1::2]  # non-contiguous: staged, written back
view.copy_(val(r, jitorch.float32, big))
dist.all_reduce(view)
check(view, expected(ReduceOp.SUM, jitorch.float32, big), "large non-contiguous")
assert (base[:, 0::2] == -1).all()

for d in (jitorch.bfloat16, jitorch.int64, jitorch.bool, jitorch.complex64):
    t = val(r, d)
    call(dist.broadcast, t, src=2, async_op=d is jitorch.int64)
    check(t, as64(val(2, d)), f"broadcast {d}")
t = jitorch.zeros(4, 2).t()
if r == 0:
    t.copy_(val(0, jitorch.float32, (2, 4)))
dist.broadcast(t, src=0)
check(t, raw(0, (2, 4)), "broadcast non-contiguous")

for d in (jitorch.float32, jitorch.bfloat16, jitorch.int16):
    outs = [jitorch.zeros(2, 3, dtype=d) for _ in range(n)]
    call(dist.all_gather, outs, val(r, d), async_op=d is jitorch.float32)
    for k in range(n):
        check(outs[k], raw(k), f"all_gather {d}")
    stacked = jitorch.zeros(n, 2, 3, dtype=d)
    call(dist.all_gather_into_tensor, stacked, val(r, d), async_op=d is not jitorch.float32)
    check(stacked, np.stack([raw(k) for k in range(n)]), "all_gather_into_tensor")
    flat = jitorch.zeros(n * 2, 3, dtype=d)
    dist.all_gather_into_tensor(flat, val(r, d))
    check(flat, np.concatenate([raw(k) for k in range(n)]), "all_gather_into_tensor cat")

out = jitorch.zeros(2, 3)
inputs = [val(r + 10 * k, jitorch.float32) for k in range(n)]
call(dist.reduce_scatter, out, inputs, async_op=True)
check(out, sum(raw(k + 10 * r) for k in range(n)), "reduce_scatter")
out = jitorch.zeros(2, dtype=jitorch.float64)
big = jitorch.arange(2 * n, dtype=jitorch.float64) * (r + 1)
dist.reduce_scatter_tensor(out, big, op=ReduceOp.AVG)
check(out, np.arange(2 * r, 2 * r + 2) * np.mean([k + 1 for k in range(n)]), "rs_tensor")

gl = [jitorch.zeros(2, 3, dtype=jitorch.int32) for _ in range(n)] if r == 1 else None
call(dist.gather, val(r, jitorch.int32), gl, dst=1, async_op=True)
if r == 1:
    for k in range(n):
        check(gl[k], raw(k), "gather")
t = jitorch.zeros(2, 3)
sl = [val(10 + k, jitorch.float32) for k in range(n)] if r == 2 else None
dist.scatter(t, sl, src=2)
check(t, raw(10 + r), "scatter")

inp = jitorch.arange(2 * n, dtype=jitorch.float32) + 100 * r
out = jitorch.zeros(2 * n)
dist.all_to_all_single(out, inp)
check(out, np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * k for k in range(n)]), "a2a")
# uneven: rank r sends k + 1 rows to rank k
rows = [k + 1 for k in range(n)]
inp = jitorch.full((sum(rows), 2), float(r))
out = jitorch.zeros((r + 1) * n, 2)
w = dist.all_to_all_single(out, inp, [r + 1] * n, rows, async_op=True)
w.wait()
check(out, np.repeat(np.arange(n, dtype=float), r + 1)[:, None] * np.ones(2), "a2a uneven")
outs = [jitorch.zeros(k + 1, dtype=jitorch.int64) for k in range(n)]
dist.all_to_all(outs, [jitorch.full((r + 1,), 10 * r + k, dtype=jitorch.int64)
                       for k in range(n)])
for k in range(n):
    check(outs[k], np.full(k + 1, 10 * k + r), "all_to_all")

# point to point: a ring of isend/irecv, a recv from any source, batch_isend_irecv
nxt, prv = (r + 1) % n, (r - 1) % n
got = jitorch.zeros(3, dtype=jitorch.bfloat16)
ws = [dist.isend(val(r, jitorch.bfloat16, (3,)), dst=nxt), dist.irecv(got, src=prv)]
for w in ws:
    w.wait()
check(got, raw(prv, (3,)), "ring")
assert ws[1].source_rank() == prv
if r == 0:
    srcs = set()
    for _ in range(n - 1):
        t = jitorch.zeros(2)
        srcs.add(dist.recv(t, tag=7))
        check(t, np.full(2, float(max(srcs))) if len(srcs) == 1 else as64(t), "recv any")
    assert srcs == set(range(1, n))
else:
    dist.send(jitorch.full((2,), float(r)), dst=0, tag=7)
got = jitorch.zeros(2)
ops = [dist.P2POp(dist.isend, jitorch.full((2,), float(r)), nxt),
       dist.P2POp(dist.irecv, got, prv)]
for w in dist.batch_isend_irecv(ops):
    w.wait()
check(got, np.full(2, float(prv)), "batch_isend_irecv")
call(dist.barrier, async_op=True)

# objects travel in jitorch.save's format, never pickled
objs = [{"w": jitorch.arange(3), "meta": ("x", 1.5, None)}, [1, 2]] if r == 1 else [None, None]
dist.broadcast_object_list(objs, src=1)
assert objs[0]["meta"] == ("x", 1.5, None) and objs[1] == [1, 2]
assert objs[0]["w"].tolist() == [0, 1, 2]
gathered = [None] * n
dist.all_gather_object(gathered, {"rank": r, "t": jitorch.full((1,), r)})
assert [g["rank"] for g in gathered] == list(range(n))
assert [g["t"].item() for g in gathered] == list(range(n))
gl = [None] * n if r == 0 else None
dist.gather_object(r * r, gl, dst=0)
assert r != 0 or gl == [k * k for k in range(n)]
out = [None]
dist.scatter_object_list(out, [f"to {k}" for k in range(n)] if r == 2 else None, src=2)
assert out == [f"to {r}"]


class Secret:  # an arbitrary class: a receiver must refuse it, never run its code
    def __init__(self):
        self.x = 1


objs = [Secret()] if r == 0 else [None]
try:
    dist.broadcast_object_list(objs, src=0)
    assert r == 0
except pickle.UnpicklingError:
    assert r != 0 and objs == [None]

# a group of ranks 0 and 2: rank 1 is outside it and does nothing
g = dist.new_group([2, 0])
if r == 1:
    assert g is dist.GroupMember.NON_GROUP_MEMBER
else:
    assert dist.get_process_group_ranks(g) == [0, 2]
if r == 1:
    t = jitorch.ones(2)
    assert dist.all_reduce(t, group=g) is None and t.tolist() == [1.0, 1.0]
    assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
else:
    assert dist.get_world_size(g) == 2 and dist.get_rank(g) == r // 2
    t = jitorch.full((2,), float(r + 1))
    dist.all_reduce(t, group=g)
    assert t.tolist() == [4.0, 4.0]
    t = jitorch.full((1,), float(r))
    dist.broadcast(t, src=2, group=g)
    assert t.tolist() == [2.0]
    try:
        dist.broadcast(t, src=1, group=g)
        raise AssertionError("rank 1 is not in the group")
    except ValueError as e:
        assert "Global rank 1 is not part of group" in str(e)
    assert dist.get_global_rank(g, 1) == 2 and dist.get_group_rank(g, 2) == 1

# PyTorch's errors, raised before anything is sent (so every rank raises the same)
def raises(exc, match, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except exc as e:
        assert match in str(e), (match, str(e))
    else:
        raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")


raises(TypeError, "Expected parameter `tensor` of type torch.Tensor", dist.all_reduce, [1.0])
raises(ValueError, "all_reduce does not support RedOpType.MAX on complex tensors",
       dist.all_reduce, jitorch.zeros(2, dtype=jitorch.complex64), op=ReduceOp.MAX)
raises(RuntimeError, "Cannot use RedOpType.BAND with non-integral dtype", dist.all_reduce,
       jitorch.zeros(2), op=ReduceOp.BAND)
raises(RuntimeError, "invalid tensor type at index 0", dist.all_gather,
       [jitorch.zeros(2, dtype=jitorch.float64) for _ in range(n)], jitorch.zeros(2))
raises(RuntimeError, "invalid tensor size at index 1", dist.all_gather,
       [jitorch.zeros(2), jitorch.zeros(3)] + [jitorch.zeros(2)] * (n - 2), jitorch.zeros(2))
raises(RuntimeError, "output tensor size must be equal to world_size times input tensor size",
       dist.all_gather_into_tensor, jitorch.zeros(2 * n + 1), jitorch.zeros(2))
raises(RuntimeError, "input tensor must be the same size as output size times world size",
       dist.reduce_scatter_tensor, jitorch.zeros(2), jitorch.zeros(2 * n + 1))
raises(RuntimeError, "Tensor's dim 0 does not divide equally across group size",
       dist.all_to_all_single, jitorch.zeros(n + 1), jitorch.zeros(n + 1))
raises(ValueError, "should not be the same as rank of the current process", dist.send,
       jitorch.zeros(1), dst=r)
if r == 0:
    raises(ValueError, "Argument ``gather_list`` must be specified on destination rank.",
           dist.gather, jitorch.zeros(1), None, dst=0)
else:
    raises(ValueError, "must NOT be specified on non-destination ranks", dist.gather,
           jitorch.zeros(1), [jitorch.zeros(1)] * n, dst=0)
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"[OK {r}]")
'''


def test_every_collective_on_three_ranks_matches_numpy(tmp_path):
    p = mpi_job(tmp_path, COLLECTIVES, 3)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK 0", "OK 1", "OK 2"]


ONE_RANK = r'''
from datetime import timedelta
import jitorch
import jitorch.distributed as dist


def raises(exc, match, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except exc as e:
        assert match in str(e), (match, str(e))
    else:
        raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")


assert dist.is_available() and not dist.is_initialized()
raises(ValueError, "Default process group has not been initialized", dist.get_rank)
raises(ValueError, "Default process group has not been initialized", dist.all_reduce,
       jitorch.ones(1))
raises(NotImplementedError, "CUDA", dist.init_process_group, "nccl")
raises(ValueError, "world_size=2 but the MPI job gives 1", dist.init_process_group,
       world_size=2)
dist.init_process_group(init_method="env://", timeout=timedelta(seconds=5), world_size=1,
                        rank=0)
raises(RuntimeError, "trying to initialize the default process group twice!",
       dist.init_process_group)
assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "mpi")
t = jitorch.arange(4.0)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
out = [None]
dist.all_gather_object(out, {"a": 1})
assert out == [{"a": 1}]
dist.destroy_process_group()
assert not dist.is_initialized()
dist.init_process_group("mpi")  # again, after destroy
assert dist.get_world_size() == 1
print("[OK]")
'''


def test_one_rank_job_under_plain_python_and_errors(tmp_path):
    script = tmp_path / "one.py"
    script.write_text(ONE_RANK)
    p = run([sys.executable, str(script)])
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK"]


def test_without_mpi4py_not_available_and_init_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    assert dist.is_available() is False and dist.is_initialized() is False
    with pytest.raises(RuntimeError, match=r"pip install 'jitorch\[distributed\]'"):
        dist.init_process_group("mpi")


FAULTS = r'''
import sys, time
from datetime import timedelta
import jitorch
import jitorch.distributed as dist

dist.init_process_group("mpi", timeout=timedelta(seconds=1))
if sys.argv[1] == "stall":
    if dist.get_rank() == 1:
        time.sleep(600)  # never joins: rank 0's all_reduce must time out and end the job
    dist.all_reduce(jitorch.ones(3))
elif sys.argv[1] == "stall-large":
    if dist.get_rank() == 1:
        time.sleep(600)  # the same for an all_reduce inside MPI's blocking call (the watchdog)
    dist.all_reduce(jitorch.ones(1 << 16))
elif sys.argv[1] == "caught":
    if dist.get_rank() == 1:
        time.sleep(600)
    try:
        dist.barrier()
    except dist.DistBackendError:
        time.sleep(600)  # caught: the job is still aborted a few seconds later
else:
    if dist.get_rank() == 1:
        raise ValueError("rank 1 fails")
    dist.barrier()  # rank 0 would wait forever for rank 1
print("unreachable")
'''


@pytest.mark.parametrize("mode", ["stall", "stall-large", "caught", "raise"])
def test_faults_end_the_job_instead_of_hanging(tmp_path, mode):
    p = mpi_job(tmp_path, FAULTS, 2, mode, timeout=60)
    assert p.returncode != 0
    assert "unreachable" not in p.stdout
    if mode == "raise":
        assert "ValueError: rank 1 fails" in p.stderr
        assert "rank 1 raised ValueError; aborting the job" in p.stderr
    else:
        op = "barrier" if mode == "caught" else "all_reduce"
        assert f"jitorch.distributed.DistBackendError: [Rank 0] Watchdog caught collective " \
               f"operation timeout: {op} ran for 1000 milliseconds" in p.stderr \
               or f"aborting the job after [Rank 0] Watchdog caught collective operation " \
                  f"timeout: {op}" in p.stderr, p.stderr


def test_reduce_op_and_errors_are_pytorchs():
    assert str(dist.ReduceOp.SUM) == "RedOpType.SUM"
    assert dist.ReduceOp.RedOpType.AVG is dist.ReduceOp.AVG
    assert issubclass(dist.DistBackendError, RuntimeError)
