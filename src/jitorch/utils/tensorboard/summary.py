"""Summary protobufs for `SummaryWriter`, in the layouts TensorBoard's plugins read.

Owns the conversion of jitorch Tensors / NumPy arrays / numbers into `Summary` messages:
scalars (`simple_value`, as PyTorch writes them), histograms (NumPy's histogram with
TensorBoard's bucket convention: right limits only, an empty bin on the left), images (PNG,
encoded here with zlib: no imaging library needed), text (the text plugin's string tensor) and
hparams (the hparams plugin's experiment / session start / session end). Same layouts as
`torch.utils.tensorboard.summary`.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from ..._tensor import Tensor


def make_np(x) -> np.ndarray:
    """A NumPy array of a Tensor (detached), an array, or a Python / NumPy number."""
    if isinstance(x, Tensor):
        return np.asarray(x.detach().numpy())
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x) or isinstance(x, (int, float, bool, np.generic)):
        return np.array([x])
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    raise NotImplementedError(f"Got {type(x)}, but numpy array or jitorch tensor are expected.")


def _scalar_value(x) -> float:
    a = make_np(x).squeeze()
    if a.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: "
                             f"{a.size} and {a.ndim} dimensions.")
    return float(a)


def scalar(name: str, value, new_style: bool = False, double_precision: bool = False):
    v = _scalar_value(value)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=v)])
    tp = TensorProto(double_val=[v], dtype="DT_DOUBLE") if double_precision else \
        TensorProto(float_val=[v], dtype="DT_FLOAT")
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=tp, metadata=smd)])


def default_bins() -> list:
    """TensorBoard's default histogram buckets: +-1e-12 .. 1e20, growing by 1.1, and 0."""
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-b for b in reversed(pos)] + [0] + pos


def histogram(name: str, values, bins, max_bins=None):
    values = make_np(values).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=bins)
    n = len(counts)
    if max_bins is not None and n > max_bins:
        sub = n // max_bins
        if n % sub:
            counts = np.pad(counts, [[0, sub - n % sub]])
        counts = counts.reshape(-1, sub).sum(axis=-1)
        new = np.empty(counts.size + 1, limits.dtype)
        new[:-1] = limits[:-1:sub]
        new[-1] = limits[-1]
        limits = new
    # the support: from the first to the last non-empty bin; TensorBoard stores right limits,
    # so the bin left of the support (or an empty one) carries the leftmost limit
    cum = np.cumsum(counts > 0)
    start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    hist = HistogramProto(min=values.min(), max=values.max(), num=len(values),
                          sum=values.sum(), sum_squares=values.dot(values),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


# -- images -------------------------------------------------------------------------------------
def make_grid(imgs: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N1HW or N3HW (or N4HW) images tiled into one CHW canvas, `ncols` per row."""
    if imgs.shape[1] == 1:
        imgs = np.concatenate([imgs, imgs, imgs], 1)
    if imgs.ndim != 4 or imgs.shape[1] not in (3, 4):
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, c, h, w = imgs.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(n / ncols))
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=imgs.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = imgs[i]
    return canvas


def convert_to_HWC(t: np.ndarray, fmt: str) -> np.ndarray:
    fmt = fmt.upper()
    if len(set(fmt)) != len(fmt):
        raise AssertionError(f"You can not use the same dimension shorthand twice. "
                             f"input_format: {fmt}")
    if t.ndim != len(fmt):
        raise AssertionError(f"size of input tensor and input format are different. tensor "
                             f"shape: {t.shape}, input_format: {fmt}")
    if len(fmt) == 4:
        return make_grid(t.transpose([fmt.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = t.transpose([fmt.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    if len(fmt) == 2:
        hw = t.transpose([fmt.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)
    raise AssertionError(f"images have 2, 3 or 4 dimensions, not {t.ndim} ({fmt})")


def encode_png(hwc: np.ndarray) -> bytes:
    """A PNG of an HxWxC uint8 image (C = 1, 3 or 4), 8 bits per channel, no filtering."""
    h, w, c = hwc.shape
    color = {1: 0, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + hwc[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def image(tag: str, img, dataformats: str = "NCHW"):
    """Values in [0, 1] for floats (scaled by 255), [0, 255] for uint8; clipped, as PyTorch."""
    a = convert_to_HWC(make_np(img), dataformats)
    scale = 1 if a.dtype == np.uint8 else 255
    a = np.ascontiguousarray((a.astype(np.float32) * scale).clip(0, 255).astype(np.uint8))
    h, w, c = a.shape
    im = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=encode_png(a))
    return Summary(value=[Summary.Value(tag=tag, image=im)])


def text(tag: str, text_string: str):
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    pd = SummaryMetadata.PluginData(plugin_name="text",
                                    content=TextPluginData(version=0).SerializeToString())
    tp = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                     tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary",
                                        metadata=SummaryMetadata(plugin_data=pd), tensor=tp)])


# -- hparams ------------------------------------------------------------------------------------
def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """-> (experiment, session start, session end) summaries of the hparams plugin."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import (DataType, Experiment, HParamInfo,
                                                     MetricInfo, MetricName, Status)
    from tensorboard.plugins.hparams import metadata as md
    from tensorboard.plugins.hparams.plugin_data_pb2 import (HParamsPluginData, SessionEndInfo,
                                                             SessionStartInfo)
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing "
                        "logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or \
                not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")
    ssi = SessionStartInfo()
    infos = []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            v = float(make_np(v).reshape(-1)[0])
        if isinstance(v, bool):
            ssi.hparams[k].bool_value = v
            kind, field = "DATA_TYPE_BOOL", "bool_value"
        elif isinstance(v, (int, float)):
            ssi.hparams[k].number_value = v
            kind, field = "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(v, str):
            ssi.hparams[k].string_value = v
            kind, field = "DATA_TYPE_STRING", "string_value"
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        dom = None
        if k in domains:
            dom = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d})
                                               for d in domains[k]])
        infos.append(HParamInfo(name=k, type=DataType.Value(kind), domain_discrete=dom))

    def wrap(tag, **content):
        data = HParamsPluginData(version=md.PLUGIN_DATA_VERSION, **content)
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name=md.PLUGIN_NAME, content=data.SerializeToString()))
        return Summary(value=[Summary.Value(tag=tag, metadata=smd)])

    exp = Experiment(hparam_infos=infos,
                     metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (wrap(md.EXPERIMENT_TAG, experiment=exp),
            wrap(md.SESSION_START_INFO_TAG, session_start_info=ssi),
            wrap(md.SESSION_END_INFO_TAG,
                 session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))
