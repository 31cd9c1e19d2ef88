"""jitorch.utils.data: datasets, samplers, collation and the DataLoader (PyTorch's semantics and
error messages; worker processes are slow to start, so few tests use them)."""
import collections
import time

import numpy as np
import pytest

import jitorch
from jitorch.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                                IterableDataset, RandomSampler, SequentialSampler, StackDataset,
                                Subset, SubsetRandomSampler, TensorDataset,
                                WeightedRandomSampler, default_collate, default_convert,
                                get_worker_info, random_split)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


class Range(IterableDataset):
    """Shards itself across workers with get_worker_info, as PyTorch's docs show."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def test_namespace():
    assert jitorch.utils.data.DataLoader is DataLoader
    assert get_worker_info() is None


def test_dataset_base_and_concat():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    c = Squares(3) + Squares(2)
    assert isinstance(c, ConcatDataset) and len(c) == 5
    assert [c[i] for i in range(5)] == [0, 1, 4, 0, 1]
    assert c[-1] == 1 and c[-5] == 0
    with pytest.raises(ValueError, match="absolute value of index"):
        c[-6]
    with pytest.raises(AssertionError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Range(2)])
    chain = Range(2) + Range(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2]
    assert len(chain) == 5


def test_tensor_stack_and_subset_datasets():
    x, y = jitorch.arange(6.).reshape(3, 2), jitorch.tensor([7, 8, 9])
    ds = TensorDataset(x, y)
    assert len(ds) == 3
    a, b = ds[1]
    assert a.tolist() == [2.0, 3.0] and b.item() == 8
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(jitorch.ones(2), jitorch.ones(3))
    st = StackDataset(Squares(3), Squares(3))
    assert st[2] == (4, 4) and len(st) == 3
    assert StackDataset(a=Squares(2), b=Squares(2))[1] == {"a": 1, "b": 1}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(2), Squares(3))
    sub = Subset(Squares(10), [9, 0, 3])
    assert len(sub) == 3 and sub[0] == 81 and sub.__getitems__([2, 1]) == [9, 0]


def test_random_split():
    parts = random_split(range(10), [0.33, 0.33, 0.34])
    assert [len(p) for p in parts] == [4, 3, 3]
    assert [len(p) for p in random_split(range(5), [0.5, 0.5])] == [3, 2]
    parts = random_split(range(10), [3, 7], generator=jitorch.Generator().manual_seed(1))
    again = random_split(range(10), [3, 7], generator=jitorch.Generator().manual_seed(1))
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    assert list(parts[0]) == list(again[0])
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(5), [2, 2])
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(5), [0.5, 0.6])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(1), [0.5, 0.5])


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = jitorch.Generator().manual_seed(3)
    perm = list(RandomSampler(range(20), generator=g))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    assert perm == list(RandomSampler(range(20), generator=jitorch.Generator().manual_seed(3)))
    rs = RandomSampler(range(5), replacement=True, num_samples=70)
    draws = list(rs)
    assert len(rs) == len(draws) == 70 and set(draws) <= set(range(5))
    more = list(RandomSampler(range(3), num_samples=7))
    assert len(more) == 7 and sorted(more[:3]) == [0, 1, 2]
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got "
                                        "replacement=1"):
        RandomSampler(range(5), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, "
                                         "but got num_samples=0"):
        RandomSampler(range(5), num_samples=0)
    sub = list(SubsetRandomSampler([10, 20, 30]))
    assert sorted(sub) == [10, 20, 30]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0, 2.0], 50))
    assert len(w) == 50 and set(w) <= {1, 3}
    assert sorted(WeightedRandomSampler([1, 1, 1], 3, replacement=False)) == [0, 1, 2]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1, 2], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1, 2], 2, replacement=1)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1, 2]], 2)
    assert list(BatchSampler(range(5), 2, False)) == [[0, 1], [2, 3], [4]]
    assert list(BatchSampler(range(5), 2, True)) == [[0, 1], [2, 3]]
    assert len(BatchSampler(range(5), 2, False)) == 3 and len(BatchSampler(range(5), 2, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but "
                                         "got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got "
                                         "drop_last=x"):
        BatchSampler(range(3), 2, "x")


def test_default_collate():
    assert default_collate([1, 2]).dtype == jitorch.int64
    assert default_collate([1.0, 2.0]).dtype == jitorch.float64  # Python floats: float64
    assert default_collate([True, False]).dtype == jitorch.bool
    assert default_collate([np.float32(1), np.float32(2)]).dtype == jitorch.float32
    arrs = default_collate([np.ones(2, np.float32), np.zeros(2, np.float32)])
    assert arrs.dtype == jitorch.float32 and arrs.shape == (2, 2)
    t = default_collate([jitorch.ones(2, dtype=jitorch.int32), jitorch.zeros(2,
                                                                         dtype=jitorch.int32)])
    assert t.dtype == jitorch.int32 and t.tolist() == [[1, 1], [0, 0]]
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]
    d = default_collate([{"x": 1, "y": "s"}, {"x": 2, "y": "t"}])
    assert d["x"].tolist() == [1, 2] and d["y"] == ["s", "t"]
    pair = default_collate([(1, 2.0), (3, 4.0)])
    assert isinstance(pair, list) and pair[0].tolist() == [1, 3]
    assert pair[1].dtype == jitorch.float64
    P = collections.namedtuple("P", "x y")
    p = default_collate([P(1, 2), P(3, 4)])
    assert type(p) is P and p.y.tolist() == [2, 4]
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but "
                                           r"got \[2\] at entry 0 and \[3\] at entry 1"):
        default_collate([jitorch.ones(2), jitorch.ones(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal "
                                           "size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                                        "arrays, numbers, dicts or lists; found"):
        default_collate([object()])


def test_default_convert():
    out = default_convert([np.array([1, 2]), 3, "x"])
    assert isinstance(out[0], jitorch.Tensor) and out[1] == 3 and out[2] == "x"
    s = default_convert(np.float64(2.0))
    assert s.dtype == jitorch.float64 and s.dim() == 0
    strs = np.array(["a"])
    assert default_convert(strs) is strs
    assert default_convert({"k": (np.zeros(1),)})["k"][0].shape == (1,)


def test_dataloader_batches_and_len():
    ds = TensorDataset(jitorch.arange(10.), jitorch.arange(10))
    batches = list(DataLoader(ds, batch_size=4))
    assert len(batches) == 3 == len(DataLoader(ds, batch_size=4))
    assert batches[2][1].tolist() == [8, 9] and batches[0][0].dtype == jitorch.float32
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=4, drop_last=True)] == \
        [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert list(DataLoader(range(3), batch_size=None)) == [0, 1, 2]
    assert [b.tolist() for b in DataLoader(range(5), batch_size=2, pin_memory=True)] == \
        [[0, 1], [2, 3], [4]]
    got = list(DataLoader(range(4), batch_size=2, collate_fn=lambda b: tuple(b)))
    assert got == [(0, 1), (2, 3)]
    loader = DataLoader(range(4), batch_sampler=[[3, 0], [1]])
    assert [b.tolist() for b in loader] == [[3, 0], [1]] and len(loader) == 2
    assert [b.tolist() for b in DataLoader(range(4), sampler=[2, 1], batch_size=2)] == [[2, 1]]


def test_dataloader_frozen_attributes():
    loader = DataLoader(range(3))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        loader.batch_size = 2
    loader.num_workers = 0  # not frozen


def test_dataloader_shuffle_with_generator():
    def epoch(seed):
        loader = DataLoader(range(12), batch_size=5, shuffle=True,
                            generator=jitorch.Generator().manual_seed(seed))
        return [x for b in loader for x in b.tolist()]
    a = epoch(7)
    assert sorted(a) == list(range(12)) and a != list(range(12))
    assert a == epoch(7) and a != epoch(8)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(batch_size=0), "batch_size should be a positive integer value"),
])
def test_dataloader_argument_errors(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        DataLoader(range(5), **kwargs)


def test_dataloader_iterable_dataset():
    assert [b.tolist() for b in DataLoader(Range(5), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for b in DataLoader(Range(5), batch_size=2, drop_last=True)] == \
        [[0, 1], [2, 3]]
    assert len(DataLoader(Range(5), batch_size=2)) == 3
    assert [int(x) for x in DataLoader(Range(3), batch_size=None)] == [0, 1, 2]
    for kw, what in [(dict(shuffle=True), "shuffle"), (dict(sampler=[0]), "sampler"),
                     (dict(batch_sampler=[[0]]), "batch_sampler")]:
        with pytest.raises(ValueError, match=f"expected unspecified {what} option"):
            DataLoader(Range(3), **kw)

    class NoLen(IterableDataset):
        def __iter__(self):
            return iter(range(2))
    with pytest.raises(TypeError):
        len(DataLoader(NoLen()))


class WhoAmI(Dataset):
    """(index, worker id, num_workers, a draw from the worker's seeded global generator,
    a dict holding a bfloat16 tensor)."""

    def __getitem__(self, i):
        info = get_worker_info()
        return (i, info.id, info.num_workers, jitorch.rand(()).item(),
                {"bf": jitorch.full((2,), i, dtype=jitorch.bfloat16)})

    def __len__(self):
        return 10


def test_worker_processes_map_style():
    inits = []

    def run():
        loader = DataLoader(WhoAmI(), batch_size=3, num_workers=2,
                            worker_init_fn=lambda wid: inits.append(wid),
                            generator=jitorch.Generator().manual_seed(5))
        assert len(loader) == 4
        return list(loader)
    batches = run()
    idx = [x for b in batches for x in b[0].tolist()]
    assert idx == list(range(10))  # in order, as in the single-process loader
    assert {w for b in batches for w in b[1].tolist()} == {0, 1}
    assert all(n == 2 for b in batches for n in b[2].tolist())
    assert inits == []  # worker_init_fn ran in the worker processes, not here
    assert batches[1][4]["bf"].dtype == jitorch.bfloat16
    assert batches[1][4]["bf"].tolist() == [[3.0, 3.0], [4.0, 4.0], [5.0, 5.0]]
    # workers seed their global generator from the loader's generator: reproducible draws
    draws = [b[3].tolist() for b in batches]
    assert draws == [b[3].tolist() for b in run()] and len(set(draws[0] + draws[1])) == 6


def test_worker_processes_iterable_sharding_and_persistence():
    loader = DataLoader(Range(11), batch_size=2, num_workers=3, persistent_workers=True)
    first = sorted(x for b in loader for x in b.tolist())
    second = sorted(x for b in loader for x in b.tolist())
    assert first == second == list(range(11))
    workers = loader._iterator._workers
    assert all(w.is_alive() for w in workers)
    loader._iterator._shutdown_workers()


class Failing(Dataset):
    def __getitem__(self, i):
        if i == 3:
            raise KeyError("boom")
        return i

    def __len__(self):
        return 6


class Slow(Dataset):
    def __getitem__(self, i):
        time.sleep(2)
        return i

    def __len__(self):
        return 2


class Dies(Dataset):
    def __getitem__(self, i):
        import os
        os._exit(3)

    def __len__(self):
        return 2


def test_worker_errors_and_timeout():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+.*\) exited "
                                           "unexpectedly"):
        list(DataLoader(Dies(), num_workers=1))
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(Failing(), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.2))


def test_worker_threads():
    loader = DataLoader(Range(7), batch_size=2, num_workers=2, multiprocessing_context="thread")
    assert sorted(x for b in loader for x in b.tolist()) == list(range(7))
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker thread"):
        list(DataLoader(Failing(), batch_size=2, num_workers=2,
                        multiprocessing_context="thread"))
    assert [b.tolist() for b in DataLoader(Squares(5), batch_size=2, num_workers=2,
                                           multiprocessing_context="thread")] == \
        [[0, 1], [4, 9], [16]]
