"""RRef lifetime (PyTorch's Remote Reference Protocol) in a real MPI job of 3 workers, under a
timeout: an owner frees a value once the last RRef to it on any worker is gone (a user's, a
forwarded one, the owner's own), keeps it while one lives (an RRef sent on to a third worker
and dropped by its sender at once; a call in flight on a dropped RRef), `shutdown` sends the
drops still pending, and malformed fork records are refused naming the defect. Plus the fork
records' wire form, in process."""
import pytest

from dist_jobs import mpi_job, ok_lines

LIFETIME = r'''
import gc, time
import jitorch
import jitorch.distributed.rpc as rpc
from jitorch.distributed.rpc import agent as agent_mod, api, wire
from mpi4py import MPI


def make(n):
    return jitorch.ones(n)


class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        time.sleep(0.05)  # the caller's drop of its RRef comes first
        return self.v


def slots():  # the values this worker keeps, and the forks of them it knows of
    a = api._agent()
    forks = list(getattr(a, "_forks", {}).values())
    return len(a._owned), sum(len(f.live) + len(f.early) for f in forks)


def flush():  # send this worker's drops now, and wait until their owners applied them
    gc.collect()
    for f in getattr(api._agent(), "flush_forks", lambda wait: [])(wait=True):
        f.wait()


def wait_for(owner, want):  # the records of other workers come when they come
    deadline = time.monotonic() + 10
    while (rpc.rpc_sync(owner, slots) if owner != r else slots()) != want:
        assert time.monotonic() < deadline, (owner, want)
        time.sleep(0.005)


kept = []


def keep(rref):
    kept.append(rref)


def fetch_kept():
    return kept[0].to_here()


def fetch(rref):
    return rref.to_here()


def drop_kept():
    kept.clear()
    flush()


def owned_here(n):  # an RRef the callee owns, returned (its own object gone at once)
    return rpc.RRef(jitorch.full((n,), 7.))


r = MPI.COMM_WORLD.Get_rank()
rpc.init_rpc(f"worker{r}", rpc_backend_options=rpc.TensorPipeRpcBackendOptions(
    num_worker_threads=4, rpc_timeout=30))
a = api._agent()
if r == 0:
    base = rpc.rpc_sync(1, slots)
    assert base == (0, 0), base
    held = rpc.remote(1, make, args=(4,))
    rrefs = [rpc.remote(1, make, args=(i,)) for i in range(5)]
    [x._get_future().wait() for x in rrefs + [held]]  # created
    assert rpc.rpc_sync(1, slots)[0] == 6
    del rrefs
    flush()
    wait_for(1, (1, 1))  # the dropped ones are freed; the held one is not
    assert held.to_here().tolist() == [1.0] * 4
    print("[OK freed]")
    for i in range(100):  # an RRef per step of a loop
        assert rpc.remote(1, make, args=(2,)).to_here().tolist() == [1.0, 1.0]
    flush()
    wait_for(1, (1, 1))
    print("[OK loop]")
    # forwarded to a third worker and dropped by its sender at once: the owner learns of the
    # new user before the sender's drop
    fwd = rpc.remote(1, make, args=(3,))
    sent = rpc.rpc_async(2, keep, args=(fwd,))
    del fwd
    flush()
    sent.wait()
    assert rpc.rpc_sync(2, fetch_kept).tolist() == [1.0] * 3
    assert rpc.rpc_sync(1, slots) == (2, 2)
    rpc.rpc_sync(2, drop_kept)
    wait_for(1, (1, 1))
    print("[OK forwarded]")
    # calls in flight on an RRef dropped meanwhile; an owner's own RRef returned to a user
    fut = rpc.remote(1, Box, args=(jitorch.ones(2),)).rpc_async().get()
    flush()
    assert fut.wait().tolist() == [1.0, 1.0]
    out = rpc.remote(1, Box, args=(jitorch.ones(2),)).remote().get()
    flush()
    assert out.to_here().tolist() == [1.0, 1.0]
    mine = rpc.rpc_sync(1, owned_here, args=(2,))
    assert not mine.is_owner() and mine.to_here().tolist() == [7.0, 7.0]
    del out
    flush()
    wait_for(1, (2, 2))  # `held` and `mine`
    del mine
    flush()
    wait_for(1, (1, 1))
    assert held.to_here().tolist() == [1.0] * 4
    local = rpc.RRef(jitorch.ones(1))  # an owner's own: kept while it lives
    assert rpc.rpc_sync(2, fetch, args=(local,)).tolist() == [1.0]
    flush()
    wait_for(0, (1, 1))  # worker2's copy gone, ours kept
    assert local.to_here().tolist() == [1.0]
    del local
    flush()
    assert slots() == (0, 0)
    print("[OK owners]")

    # malformed fork records and RRefs: refused, naming the defect
    def refused(make_msg, want, tag=agent_mod.TAG_FORKS):
        try:
            a.send_message(1, make_msg, "hostile", 10, tag=tag).wait()
            raise AssertionError(f"accepted: {want}")
        except RuntimeError as e:
            assert want in str(e), (want, str(e))
    mine_id = (0 << 40) | 999999
    refused(lambda cid: wire._frame(cid, b"\x04\x01\x00\x00\x00A", []), "claims 1 fork records")
    refused(lambda cid: wire.pack_forks(cid, [(ord("X"), mine_id, mine_id)]),
            "unknown operation 88")
    refused(lambda cid: wire.pack_forks(cid, [(ord("A"), mine_id, (1 << 40) | 5)]),
            "which another worker made")
    refused(lambda cid: wire.pack_forks(cid, [(ord("D"), 7 << 40, mine_id)]),
            "made by no worker")
    refused(lambda cid: wire.pack_forks(cid, [(ord("D"), mine_id, mine_id)] * 2),
            "dropped twice")
    # (the first drop waits for its announcement, which settles it)
    a.send_message(1, lambda cid: wire.pack_forks(cid, [(ord("A"), mine_id, mine_id)]),
                   "settle", 10, tag=agent_mod.TAG_FORKS).wait()
    refused(lambda cid: wire.pack(cid, {"c": [], "rpc": {"op": "remote", "cid": None,
                                                          "fn": "__main__:make",
                                                          "rref": 2 << 40}}, []),
            "an id it did not make", tag=agent_mod.TAG_REQUEST)
    bad_rref = {"$": "object", "id": 0, "module": "jitorch.distributed.rpc.api",
                "qualname": "RRef", "state": {"$": "dict", "items": [["_owner", 1],
                                                                     ["_id", 5]]}}
    refused(lambda cid: wire.pack(cid, {"format": "jitorch.rpc", "version": 1, "storages": [],
                                        "object": bad_rref, "rpc": {"op": "call", "cid": None,
                                                                   "fn": "__main__:keep"}},
                                  []), "a malformed RRef", tag=agent_mod.TAG_REQUEST)
    assert held.to_here().tolist() == [1.0] * 4  # the owner serves on
    print("[OK refused]")
    pending = [rpc.remote(1, make, args=(1,)) for _ in range(3)]
    del pending, held  # shutdown sends these drops
rpc.shutdown()
if r == 1:  # every value freed: the drops of worker0 came before its shutdown ended
    assert not a._owned and not a._forks, (a._owned, a._forks)
print(f"[OK shutdown {r}]")
'''


def test_rref_values_live_while_any_fork_does_and_are_freed_after(tmp_path):
    p = mpi_job(tmp_path, LIFETIME, 3, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK forwarded", "OK freed", "OK loop", "OK owners", "OK refused",
                           "OK shutdown 0", "OK shutdown 1", "OK shutdown 2"], p.stdout
    assert "refused" not in p.stderr, p.stderr  # the protocol's own records: all applied


def test_fork_records_round_trip_and_malformed_ones_are_refused():
    import numpy as np
    from jitorch.distributed.rpc import wire
    records = [(ord("A"), 1, 2), (ord("D"), (3 << 40) | 4, 5)]
    buf = np.frombuffer(wire.pack_forks(11, records), np.uint8).copy()
    assert wire.call_id_of(buf) == 11 and wire.unpack_forks(buf) == records
    empty = np.frombuffer(wire.pack_forks(1, []), np.uint8).copy()
    assert wire.unpack_forks(empty) == []
    short = np.frombuffer(wire._frame(1, wire.pack_forks(1, records)[24:-1], []), np.uint8)
    for raw, why in ((short, "claims 2 fork records"), (buf[:-1], "fill the message"),
                     (np.frombuffer(wire.pack_call(1, "m:f", 0, (1,)), np.uint8),
                      "not a batch of fork records"),
                     (buf[:10], "shorter than its header")):
        with pytest.raises(wire.MessageError, match=why):
            wire.unpack_forks(np.ascontiguousarray(raw))
