"""jitorch.save / jitorch.load: round trips, storage sharing, the archive format, and the
safety contract (a damaged or hostile file raises RuntimeError, never anything else)."""
import io
import json
import math
import pathlib
import random
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch import serialization as S


def _roundtrip(obj):
    buf = io.BytesIO()
    jitorch.save(obj, buf)
    buf.seek(0)
    return jitorch.load(buf)


def _bytes(obj) -> bytes:
    buf = io.BytesIO()
    jitorch.save(obj, buf)
    return buf.getvalue()


def _zip(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _npy(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _manifest(obj_node, storages, version=1, fmt="jitorch.save"):
    return json.dumps({"format": fmt, "version": version, "storages": storages,
                       "object": obj_node})


def _load_bytes(data: bytes):
    return jitorch.load(io.BytesIO(data))


DTYPES = [jitorch.bool, jitorch.uint8, jitorch.int8, jitorch.int16, jitorch.int32, jitorch.int64,
          jitorch.float16, jitorch.bfloat16, jitorch.float32, jitorch.float64, jitorch.complex64,
          jitorch.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes_roundtrip(dtype):
    src = (jitorch.arange(12) % 5 - 2).reshape(3, 4)
    t = src.to(dtype) if dtype is not jitorch.bool else src > 0
    if dtype.is_complex:
        t = t + 1j * src.to(dtype)
    r = _roundtrip(t)
    assert r.dtype == dtype and r.shape == t.shape
    assert np.array_equal(r.numpy(), t.numpy())


def test_bfloat16_is_stored_as_uint16_bits():
    data = _bytes(jitorch.tensor([1.5, -2.0], dtype=jitorch.bfloat16))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        arr = np.load(io.BytesIO(zf.read("data/0.npy")), allow_pickle=False)
    assert arr.dtype == np.uint16


def test_containers_and_scalars_roundtrip():
    obj = {"i": 3, 2: -7, (1, "k"): "tuple key", "f": 2.5, "nan": math.nan, "inf": -math.inf,
           "c": 1 + 2j, "b": b"\x00\xffbytes", "none": None, "t": True, "set": {1, 2},
           "fs": frozenset({"a"}), "size": jitorch.Size([2, 3]), "dtype": jitorch.float16,
           "dev": jitorch.device("cpu"), "list": [1, [2, (3,)]], "od": OrderedDict(z=1, a=2),
           "big": 1 << 80, "s": "üñí"}
    r = _roundtrip(obj)
    assert list(r.keys()) == list(obj.keys())
    for k, v in obj.items():
        if k == "nan":
            assert math.isnan(r[k])
        else:
            assert r[k] == v and type(r[k]) is type(v), k
    assert type(r["od"]) is OrderedDict and list(r["od"]) == ["z", "a"]


def test_state_dict_roundtrip_and_load():
    torch_like = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    sd = torch_like.state_dict()
    r = _roundtrip(sd)
    assert type(r) is OrderedDict and list(r) == list(sd)
    assert r._metadata == sd._metadata
    fresh = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    fresh.load_state_dict(r)
    x = jitorch.randn(5, 3)
    assert jitorch.equal(fresh(x), torch_like(x))


def test_views_share_storage_after_load():
    a = jitorch.arange(12.).reshape(3, 4)
    v = a[1:, ::2]
    t = a.t()
    r = _roundtrip({"a": a, "v": v, "t": t, "again": a})
    assert r["again"] is r["a"]
    assert r["v"].stride() == v.stride() and r["t"].stride() == t.stride()
    assert jitorch.equal(r["v"], v) and jitorch.equal(r["t"], t)
    r["a"][1, 0] = 100.0
    assert r["v"][0, 0].item() == 100.0 and r["t"][0, 1].item() == 100.0


def test_lone_slice_saves_only_its_bytes():
    big = jitorch.zeros(10000)
    assert len(_bytes(big[:4])) < 2000
    e = jitorch.tensor([1.0, 2.0]).expand(1000, 2)
    r = _roundtrip(e)
    assert r.stride() == (0, 1) and jitorch.equal(r, e) and len(_bytes(e)) < 2000


def test_empty_and_scalar_tensors():
    r = _roundtrip([jitorch.empty(0, 3), jitorch.tensor(7), jitorch.empty(2, 0)[:, :]])
    assert r[0].shape == (0, 3) and r[1].item() == 7 and r[1].dim() == 0
    assert r[2].shape == (2, 0)


def test_requires_grad_and_parameters():
    a = jitorch.ones(3, requires_grad=True)
    b = a * 2  # non-leaf: loads as a leaf that requires grad, as in PyTorch
    p = nn.Parameter(jitorch.randn(2))
    q = nn.Parameter(jitorch.randn(2), requires_grad=False)
    r = _roundtrip([a, b, p, q, jitorch.ones(1)])
    assert r[0].requires_grad and r[0].is_leaf
    assert r[1].requires_grad and r[1].is_leaf and r[1].grad_fn is None
    assert type(r[2]) is nn.Parameter and r[2].requires_grad and jitorch.equal(r[2], p)
    assert type(r[3]) is nn.Parameter and not r[3].requires_grad
    assert not r[4].requires_grad
    r[0].sum().backward()
    assert r[0].grad.tolist() == [1.0, 1.0, 1.0]


def test_paths_and_file_objects(tmp_path):
    t = jitorch.arange(5)
    jitorch.save(t, str(tmp_path / "a.pt"))
    jitorch.save(t, tmp_path / "b.pt")
    assert jitorch.equal(jitorch.load(str(tmp_path / "a.pt")), t)
    assert jitorch.equal(jitorch.load(pathlib.Path(tmp_path / "b.pt")), t)
    with open(tmp_path / "c.pt", "wb") as f:
        jitorch.save(t, f)
    with open(tmp_path / "c.pt", "rb") as f:
        assert jitorch.equal(jitorch.load(f, weights_only=False), t)

    class NoSeek(io.RawIOBase):
        def __init__(self, data):
            self.inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.inner.readinto(b)

    assert jitorch.equal(jitorch.load(NoSeek(_bytes(t))), t)
    with pytest.raises(FileNotFoundError):
        jitorch.load(tmp_path / "missing.pt")


def test_map_location():
    t = jitorch.arange(3)
    data = _bytes({"t": t})
    assert jitorch.equal(jitorch.load(io.BytesIO(data), map_location="cpu")["t"], t)
    assert jitorch.equal(jitorch.load(io.BytesIO(data), map_location=jitorch.device("cpu"))["t"],
                         t)
    assert jitorch.equal(jitorch.load(io.BytesIO(data), map_location={"cpu": "cpu"})["t"], t)
    r = jitorch.load(io.BytesIO(data), map_location=lambda s, loc: s * 2)
    assert r["t"].tolist() == [0, 2, 4]
    if jitorch.cuda.is_available():  # (the cuda tier: tests/test_device.py)
        assert jitorch.load(io.BytesIO(data), map_location="cuda")["t"].is_cuda
    else:
        with pytest.raises(NotImplementedError):
            jitorch.load(io.BytesIO(data), map_location="cuda")
    with pytest.raises(RuntimeError, match="never unpickles"):
        jitorch.load(io.BytesIO(data), pickle_module=object())


def test_save_rejects_what_it_cannot_represent():
    class Foo:
        pass
    with pytest.raises(TypeError, match=r"Foo \(at obj\['x'\]\[1\]\)"):
        jitorch.save({"x": [1, Foo()]}, io.BytesIO())
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        jitorch.save(loop, io.BytesIO())


def test_archive_layout_is_plain_data():
    data = _bytes({"w": jitorch.ones(2, 2), "n": 1})
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = sorted(zf.namelist())
        assert names == ["data/0.npy", "manifest.json"]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        man = json.loads(zf.read("manifest.json"))
    # tensors and containers only: version 1, which readers from before objects (2) read
    assert man["format"] == "jitorch.save" and man["version"] == 1
    assert man["storages"] == [{"dtype": "float32", "numel": 4}]


def test_newer_version_says_so():
    m = _manifest(1, [], version=S.FORMAT_VERSION + 1)
    new, known = S.FORMAT_VERSION + 1, S.FORMAT_VERSION
    with pytest.raises(RuntimeError, match=rf"newer jitorch \(format version {new}; this "
                                           rf"jitorch reads up to version {known}\)"):
        _load_bytes(_zip({"manifest.json": m}))


def test_foreign_files_are_refused_clearly():
    with pytest.raises(RuntimeError, match="not a ZIP archive"):
        _load_bytes(b"")
    with pytest.raises(RuntimeError, match="not a ZIP archive"):
        _load_bytes(b"\x80\x02}q\x00.")  # a legacy pickle stream
    with pytest.raises(RuntimeError, match="PyTorch .*never unpickles"):
        _load_bytes(_zip({"archive/data.pkl": b"\x80\x02}q\x00.", "archive/version": b"3"}))
    with pytest.raises(RuntimeError, match="missing"):
        _load_bytes(_zip({"other.txt": b"hi"}))
    buf = io.BytesIO()
    S.write_archive(buf, {"w": jitorch.ones(1)}, format_name="jitorch.jit")
    with pytest.raises(RuntimeError, match="jitorch.jit.load"):
        _load_bytes(buf.getvalue())


HOSTILE = {
    "outside storage": ({"$": "tensor", "id": 0, "storage": 0, "dtype": "float32",
                         "shape": [5], "stride": [1], "byte_offset": 0,
                         "requires_grad": False}, np.zeros(4, np.float32)),
    "negative stride escape": ({"$": "tensor", "id": 0, "storage": 0, "dtype": "float32",
                                "shape": [3], "stride": [-1], "byte_offset": 4,
                                "requires_grad": False}, np.zeros(4, np.float32)),
    "wrong npy dtype": ({"$": "tensor", "id": 0, "storage": 0, "dtype": "float32",
                         "shape": [1], "stride": [1], "byte_offset": 0,
                         "requires_grad": False}, np.zeros(4, np.float64)),
    "unknown tag": ({"$": "__reduce__", "items": []}, None),
    "bad ref": ({"$": "ref", "id": 5}, None),
    "int requires grad": ({"$": "tensor", "id": 0, "storage": 0, "dtype": "int32",
                           "shape": [1], "stride": [1], "byte_offset": 0,
                           "requires_grad": True}, np.zeros(4, np.int32)),
    "unhashable key": ({"$": "dict", "items": [[[1], 2]]}, None),
    "deep nesting": ([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
                     * 1, None),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_manifests(case):
    node, arr = HOSTILE[case]
    members = {}
    storages = []
    if arr is not None:
        storages = [{"dtype": "float32" if "dtype" in case else str(arr.dtype),
                     "numel": int(arr.size)}]
        members["data/0.npy"] = _npy(arr)
    members["manifest.json"] = _manifest(node, storages)
    data = _zip(members)
    if case == "deep nesting":
        _load_bytes(data)  # legitimately nested: fine
        data = _zip({"manifest.json": '{"format":"jitorch.save","version":1,"object":'
                     + "[" * 100000 + "]" * 100000 + "}"})
    with pytest.raises(RuntimeError, match="not a valid jitorch file"):
        _load_bytes(data)


def test_object_npy_and_size_lies_are_refused():
    node = {"$": "tensor", "id": 0, "storage": 0, "dtype": "float32", "shape": [1],
            "stride": [1], "byte_offset": 0, "requires_grad": False}
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    data = _zip({"manifest.json": _manifest(node, [{"dtype": "float32", "numel": 1}]),
                 "data/0.npy": buf.getvalue()})
    with pytest.raises(RuntimeError, match="not a valid jitorch file"):
        _load_bytes(data)
    # a header claiming 10**12 elements must not allocate them
    data = _zip({"manifest.json": _manifest(node, [{"dtype": "float32", "numel": 10**12}]),
                 "data/0.npy": _npy(np.zeros(1, np.float32)).replace(b"(1,)", b"(1000000000000,)"
                                                                     )})
    with pytest.raises(RuntimeError, match="not a valid jitorch file"):
        _load_bytes(data)
    json_nan = '{"format":"jitorch.save","version":1,"storages":[],"object":NaN}'
    with pytest.raises(RuntimeError, match="not a valid jitorch file"):
        _load_bytes(_zip({"manifest.json": json_nan}))


def test_fuzzed_files_only_raise_runtime_error():
    obj = {"sd": nn.Linear(3, 2).state_dict(), "v": [jitorch.arange(6).reshape(2, 3)[:, 1:],
                                                      1.5, "a", (None, True)]}
    data = _bytes(obj)
    rng = random.Random(1234)
    cases = [data[:n] for n in range(0, len(data), 3)]
    for _ in range(1500):
        d = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(len(d))] = rng.randrange(256)
        cases.append(bytes(d))
    for d in cases:
        try:
            _load_bytes(d)
        except RuntimeError:
            pass


def test_archive_extension_for_module_archives(tmp_path):
    # the hooks jitorch.jit.save/load build on: extra members and manifest keys
    path = tmp_path / "m.zip"
    S.write_archive(path, {"weight": jitorch.ones(2)}, format_name="jitorch.jit",
                    extra_manifest={"module": {"methods": ["forward"]}},
                    extra_members={"code/forward.ir": b"graph(%x): ..."})

    def reader(arc):
        return (arc.manifest["module"], arc.member("code/forward.ir"),
                arc.decode(arc.manifest["object"]))
    module, code, obj = S.read_archive(path, reader, expected_format="jitorch.jit",
                                       what="jitorch.jit.load")
    assert module == {"methods": ["forward"]} and code == b"graph(%x): ..."
    assert obj["weight"].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match=r"jitorch.jit.load: .*'code/missing.ir' is missing"):
        S.read_archive(path, lambda arc: arc.member("code/missing.ir"),
                       expected_format="jitorch.jit", what="jitorch.jit.load")
    with pytest.raises(ValueError, match="reserved"):
        S.write_archive(io.BytesIO(), 1, extra_members={"data/0.npy": b""})
