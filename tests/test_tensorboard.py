"""jitorch.utils.tensorboard.SummaryWriter, read back with TensorBoard's own readers."""
import io
import os
import struct
import zlib

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

import jitorch
from jitorch.utils.tensorboard import SummaryWriter


def _acc(path):
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "images": 0,
                                                     "histograms": 0, "tensors": 0})
    acc.Reload()
    return acc


def _events(path):
    (f,) = [p for p in os.listdir(path) if p.startswith("events.out.tfevents")]
    return list(EventFileLoader(os.path.join(path, f)).Load())


def _png_pixels(data: bytes) -> np.ndarray:
    """Decode the PNGs the writer makes (8-bit, filter 0) with zlib, independently of it."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        chunks.setdefault(kind, b"")
        chunks[kind] += body
        pos += 12 + n
    w, h, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    c = {0: 1, 2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + w * c)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, c)


def test_scalars_and_purge_step(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(4):
            w.add_scalar("loss", 1.0 / (i + 1), i)
        w.add_scalar("tensor_value", jitorch.tensor(2.5), 7)
        w.add_scalars("run", {"a": 1.0, "b": jitorch.tensor(3.0)}, 2)
    acc = _acc(tmp_path)
    assert [(e.step, round(e.value, 6)) for e in acc.Scalars("loss")] == \
        [(0, 1.0), (1, 0.5), (2, 0.333333), (3, 0.25)]
    assert acc.Scalars("tensor_value")[0].value == 2.5
    for series, value in (("a", 1.0), ("b", 3.0)):
        sub = _acc(tmp_path / f"run_{series}")
        (e,) = sub.Scalars("run")
        assert (e.step, e.value) == (2, value)
    with SummaryWriter(tmp_path / "new") as w:
        w.add_scalar("ns", 0.25, 1, new_style=True)
        w.add_scalar("ns64", 0.1, 2, new_style=True, double_precision=True)
    new = _acc(tmp_path / "new")
    (e,) = new.Tensors("ns")
    assert e.step == 1 and list(e.tensor_proto.float_val) == [0.25]
    assert list(new.Tensors("ns64")[0].tensor_proto.double_val) == [0.1]
    assert new.SummaryMetadata("ns").plugin_data.plugin_name == "scalars"
    with pytest.raises(AssertionError, match="one element"):
        SummaryWriter(tmp_path / "x").add_scalar("bad", jitorch.ones(3), 0)

    w = SummaryWriter(tmp_path / "purge", purge_step=5)
    w.close()
    evs = _events(tmp_path / "purge")
    assert any(e.step == 5 and e.session_log.status == e.session_log.START for e in evs)


def test_default_log_dir_and_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_LR_0.1")
    w.close()
    (run,) = os.listdir(tmp_path / "runs")
    assert run.endswith("_LR_0.1") and w.get_logdir() == os.path.join("runs", run)


def test_histogram(tmp_path):
    vals = np.arange(100, dtype=np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", jitorch.from_numpy(vals), 3, bins=10)
        w.add_histogram("default_bins", jitorch.randn(50), 0)
    (h,) = _acc(tmp_path).Histograms("h")
    hv = h.histogram_value
    assert h.step == 3 and hv.num == 100 and hv.min == 0 and hv.max == 99
    assert hv.sum == vals.sum() and hv.sum_squares == float(vals.astype(float) @ vals)
    # TensorBoard's convention: right limits, an empty bin first
    assert list(hv.bucket) == [0] + [10] * 10
    np.testing.assert_allclose(hv.bucket_limit, np.linspace(0, 99, 11))
    assert _acc(tmp_path).Histograms("default_bins")[0].histogram_value.num == 50
    with SummaryWriter(tmp_path / "mb") as w:
        w.add_histogram("m", vals, 0, bins=10, max_bins=5)  # pairs of bins merged
    mb = _acc(tmp_path / "mb").Histograms("m")[0].histogram_value
    assert list(mb.bucket) == [0] + [20] * 5
    np.testing.assert_allclose(mb.bucket_limit, np.linspace(0, 99, 11)[::2])
    with pytest.raises(ValueError, match="no element"):
        SummaryWriter(tmp_path / "e").add_histogram("x", np.zeros(0), 0)


def test_images(tmp_path):
    chw = np.zeros((3, 4, 5), np.float32)
    chw[0, 1, 2] = 1.0
    chw[2] = 0.5
    batch = np.random.default_rng(0).integers(0, 255, (3, 1, 2, 2)).astype(np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("one", jitorch.from_numpy(chw), 1)
        w.add_image("hwc", chw.transpose(1, 2, 0), 1, dataformats="HWC")
        w.add_images("batch", jitorch.from_numpy(batch), 2)
    acc = _acc(tmp_path)
    one = acc.Images("one")[0]
    assert (one.width, one.height, one.step) == (5, 4, 1)
    px = _png_pixels(one.encoded_image_string)
    expect = (chw.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(px, expect)
    np.testing.assert_array_equal(_png_pixels(acc.Images("hwc")[0].encoded_image_string),
                                  expect)
    # a batch is tiled into one grid (3 images in a row), grey to RGB, uint8 kept as is
    grid = _png_pixels(acc.Images("batch")[0].encoded_image_string)
    assert grid.shape == (2, 6, 3)
    np.testing.assert_array_equal(grid[:, 2:4, 1], batch[1, 0])
    try:
        import PIL.Image  # TensorBoard's frontend decodes with a browser; PIL as a 2nd reader
        im = PIL.Image.open(io.BytesIO(one.encoded_image_string))
        np.testing.assert_array_equal(np.asarray(im), expect)
    except ImportError:
        pass
    with pytest.raises(AssertionError, match="input format"):
        SummaryWriter(tmp_path / "bad").add_image("x", np.zeros((4, 4)), 0)


def test_text_hparams_embedding(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("note", "hello **world**", 4)
        w.add_hparams({"lr": 0.01, "opt": "sgd", "bn": True}, {"hparam/acc": 0.9},
                      run_name="trial")
        w.add_embedding(jitorch.arange(6.0).reshape(3, 2), metadata=["a", "b", "c"],
                        label_img=jitorch.ones(3, 3, 2, 2), tag="emb")
    acc = _acc(tmp_path)
    (t,) = acc.Tensors("note/text_summary")
    assert t.step == 4 and t.tensor_proto.string_val == [b"hello **world**"]
    assert acc.SummaryMetadata("note/text_summary").plugin_data.plugin_name == "text"

    from tensorboard.plugins.hparams import metadata as hp_md
    # (the hparams plugin's summaries carry metadata only: read them from the event file)
    meta = {v.tag: v.metadata.plugin_data for e in _events(tmp_path / "trial")
            for v in e.summary.value}
    assert {hp_md.EXPERIMENT_TAG, hp_md.SESSION_START_INFO_TAG,
            hp_md.SESSION_END_INFO_TAG} <= set(meta)
    assert meta[hp_md.EXPERIMENT_TAG].plugin_name == hp_md.PLUGIN_NAME
    start = hp_md.parse_session_start_info_plugin_data(
        meta[hp_md.SESSION_START_INFO_TAG].content)
    assert start.hparams["lr"].number_value == 0.01
    assert start.hparams["opt"].string_value == "sgd" and start.hparams["bn"].bool_value
    exp = hp_md.parse_experiment_plugin_data(meta[hp_md.EXPERIMENT_TAG].content)
    assert [m.name.tag for m in exp.metric_infos] == ["hparam/acc"]
    assert [h.name for h in exp.hparam_infos] == ["lr", "opt", "bn"]
    hp = _acc(tmp_path / "trial")
    assert hp.Scalars("hparam/acc")[0].value == pytest.approx(0.9)
    with pytest.raises(TypeError, match="dictionary"):
        SummaryWriter(tmp_path / "h").add_hparams([("lr", 1)], {})

    rows = (tmp_path / "00000" / "emb" / "tensors.tsv").read_text().splitlines()
    assert rows == ["0.0\t1.0", "2.0\t3.0", "4.0\t5.0"]
    assert (tmp_path / "00000" / "emb" / "metadata.tsv").read_text() == "a\nb\nc\n"
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
    cfg = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(),
                            ProjectorConfig())
    (e,) = cfg.embeddings
    assert e.tensor_name == "emb:00000" and e.tensor_path == "00000/emb/tensors.tsv"
    assert list(e.sprite.single_image_dim) == [2, 2]
    sprite = _png_pixels((tmp_path / "00000" / "emb" / "sprite.png").read_bytes())
    assert sprite.shape == (4, 4, 3)  # 3 images of 2x2 in a 2x2 grid


class _Net(jitorch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = jitorch.nn.Linear(4, 3)

    def forward(self, x):
        return jitorch.tanh(self.fc(x)) * 2.0


def _graph_ops(path):
    g = _acc(path).Graph()
    return {n.name: n for n in g.node}


def test_add_graph_scripted_and_traced(tmp_path):
    @jitorch.jit.script
    def fn(x, y):
        return jitorch.relu(x @ y) + 1.0

    with SummaryWriter(tmp_path / "fn") as w:
        w.add_graph(fn)
    nodes = _graph_ops(tmp_path / "fn")
    ops = [n.op for n in nodes.values()]
    assert ops.count("IO Node") == 3 and "matmul" in ops and "relu" in ops and "add" in ops
    relu = next(n for n in nodes.values() if n.op == "relu")
    (src,) = relu.input
    assert nodes[src].op == "matmul" and set(nodes[src].input) == {"input/x", "input/y"}
    assert nodes["output/output.1"].input[0].endswith("add_0")

    with SummaryWriter(tmp_path / "script") as w:
        w.add_graph(jitorch.jit.script(_Net()))
    nodes = _graph_ops(tmp_path / "script")
    assert any(name.startswith("_Net.forward/Linear.forward/") for name in nodes)  # scopes
    assert "tanh" in {n.op for n in nodes.values()}

    with SummaryWriter(tmp_path / "traced") as w:
        w.add_graph(_Net(), jitorch.randn(2, 4))  # a plain module is traced
    nodes = _graph_ops(tmp_path / "traced")
    mm = next(n for n in nodes.values() if n.op == "matmul")
    shape = mm.attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [2, 3]
    with pytest.raises(ValueError, match="input_to_model"):
        SummaryWriter(tmp_path / "none").add_graph(_Net())


def test_figure_needs_matplotlib(tmp_path):
    w = SummaryWriter(tmp_path)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        with pytest.raises(ImportError, match="matplotlib"):
            w.add_figure("fig", object(), 0)
        return
    fig = plt.figure(figsize=(1, 1), dpi=20)
    w.add_figure("fig", fig, 0)
    w.close()
    assert _acc(tmp_path).Images("fig")[0].width == 20


def test_flush_close_and_reuse(tmp_path):
    w = SummaryWriter(tmp_path, flush_secs=3600, max_queue=1000)
    w.add_scalar("x", 1.0, 0)
    w.flush()  # on disk now, though the queue is far from full
    assert [e.value for e in _acc(tmp_path).Scalars("x")] == [1.0]
    w.close()
    w.close()  # a second close does nothing
    w.add_scalar("x", 2.0, 1)  # writing after close opens a new event file, as PyTorch
    w.close()
    files = [p for p in os.listdir(tmp_path) if p.startswith("events.out.tfevents")]
    assert len(files) == 2


def test_import_without_tensorboard_says_how_to_install():
    import subprocess
    import sys
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "try:\n    import jitorch.utils.tensorboard\n"
            "except ImportError as e:\n    print('ImportError:', e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120).stdout
    assert "ImportError: TensorBoard logging requires TensorBoard" in out
    assert "pip install tensorboard" in out
