"""FullyShardedDataParallel on MPI jobs: parity with DistributedDataParallel (the same losses
every step and the same weights after) for FULL_SHARD (nested units from
transformer_auto_wrap_policy, whose parameters are freed after forward and all-gathered again
for backward, and a single root unit), SHARD_GRAD_OP (size_based_auto_wrap_policy) and NO_SHARD
(ModuleWrapPolicy), with a momentum optimizer stepping on the shards; the full state dict on rank
0 under FULL_STATE_DICT with rank0_only."""
from dist_jobs import mpi_job, ok_lines

FSDP_PARITY = r'''
import functools
from datetime import timedelta
import numpy as np
import jitorch
import jitorch.distributed as dist
from jitorch import nn
from jitorch.nn.parallel import DistributedDataParallel as DDP
from jitorch.distributed.fsdp import (FullyShardedDataParallel as FSDP, ShardingStrategy,
                                      StateDictType, FullStateDictConfig)
from jitorch.distributed.fsdp.wrap import (ModuleWrapPolicy, size_based_auto_wrap_policy,
                                           transformer_auto_wrap_policy)

dist.init_process_group("mpi", timeout=timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()


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
        self.b2 = Block(7, 6)
        self.head = nn.Linear(6, 3)
        self.register_buffer("shift", jitorch.full((3,), 0.5))

    def forward(self, x):
        return self.head(self.b2(self.b1(x))) + self.shift


def make():
    jitorch.manual_seed(0)
    return Net()


S = ShardingStrategy
cases = [(S.FULL_SHARD, functools.partial(transformer_auto_wrap_policy,
                                          transformer_layer_cls={Block}), 3),
         (S.FULL_SHARD, None, 1),
         (S.SHARD_GRAD_OP, functools.partial(size_based_auto_wrap_policy, min_num_params=40), 3),
         (S.NO_SHARD, ModuleWrapPolicy({Block}), 3)]
rng = np.random.default_rng(r)
for strategy, policy, units in cases:
    ddp = DDP(make())
    fsdp = FSDP(make(), sharding_strategy=strategy, auto_wrap_policy=policy)
    assert sum(isinstance(m, FSDP) for m in fsdp.modules()) == units, strategy
    if strategy is not S.NO_SHARD:  # one 1/n shard per unit, padded
        total = sum(p.numel() for p in ddp.parameters())
        assert sum(p.numel() for p in fsdp.parameters()) == sum(
            -(-m._unit["padded"] // n) for m in fsdp.modules() if isinstance(m, FSDP))
        assert sum(p.numel() for p in fsdp.parameters()) < total
    opt_d = jitorch.optim.SGD(ddp.parameters(), lr=0.2, momentum=0.9)
    opt_f = jitorch.optim.SGD(fsdp.parameters(), lr=0.2, momentum=0.9)
    for step in range(3):
        x = jitorch.tensor(rng.standard_normal((4, 5)), dtype=jitorch.float32)
        y = jitorch.tensor(rng.standard_normal((4, 3)), dtype=jitorch.float32)
        opt_d.zero_grad()
        opt_f.zero_grad()
        ld = nn.functional.mse_loss(ddp(x), y)
        lf = nn.functional.mse_loss(fsdp(x), y)
        if strategy is S.FULL_SHARD and units > 1:  # nested units freed their parameters
            assert not hasattr(fsdp.module.b1.module.lin, "weight")
        ld.backward()
        lf.backward()
        assert abs(ld.item() - lf.item()) < 1e-5, (strategy, step, ld.item(), lf.item())
        opt_d.step()
        opt_f.step()
    with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
        sd = fsdp.state_dict()
    want = ddp.module.state_dict()
    if r == 0:
        assert list(sd) == list(want), (list(sd), list(want))
        worst = max(float((sd[k] - want[k]).abs().max()) for k in want)
        assert worst < 1e-5, (strategy, worst)
    else:
        assert sd == {}, list(sd)
    print(f"[OK fsdp {strategy.name} {units} {r}]")

for bad, exc, msg in (
        (lambda: FSDP(make(), sharding_strategy=S.HYBRID_SHARD), NotImplementedError,
         "HYBRID_SHARD"),
        (lambda: FSDP.state_dict_type(FSDP(make()), StateDictType.SHARDED_STATE_DICT)
         .__enter__(), NotImplementedError, "SHARDED_STATE_DICT")):
    try:
        bad()
        raise AssertionError(msg)
    except exc as e:
        assert msg in str(e), str(e)
print(f"[OK errors {r}]")
'''


def test_fsdp_matches_ddp_for_each_sharding_strategy(tmp_path):
    n = 3  # parameter counts not divisible by 3: the shards are padded
    p = mpi_job(tmp_path, FSDP_PARITY, n, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    want = sorted(f"OK fsdp {s} {u} {r}" for s, u in (("FULL_SHARD", 3), ("FULL_SHARD", 1),
                                                      ("SHARD_GRAD_OP", 3), ("NO_SHARD", 3))
                  for r in range(n))
    assert ok_lines(p) == sorted(want + [f"OK errors {r}" for r in range(n)]), p.stdout
