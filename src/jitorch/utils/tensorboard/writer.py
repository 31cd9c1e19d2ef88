"""`SummaryWriter`: PyTorch's TensorBoard writer (`torch.utils.tensorboard.SummaryWriter`).

Writes event files with the `tensorboard` package's own `EventFileWriter` (a queue flushed by
a background thread every `flush_secs`, or when `max_queue` events wait) and protobufs; the
summaries are built in `summary.py`, graphs in `_graph.py`. Layout as PyTorch's: the default
log_dir is `runs/<Mon DD_HH-MM-SS>_<host><comment>`; `add_scalars` writes one run per series
under `<log_dir>/<main_tag>_<tag>`; `add_hparams` writes a run under `<log_dir>/<run_name>`;
`add_embedding` writes the projector's TSV files and `projector_config.pbtxt`.
"""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as S
from ._graph import graph_def, graph_of


class FileWriter:
    """Writes protobufs to one event file in `log_dir` (what SummaryWriter uses per run)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph, walltime=None) -> None:
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        self.event_writer.reopen()


class SummaryWriter:
    """`SummaryWriter(log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
    filename_suffix="")`: `add_scalar`, `add_scalars`, `add_histogram`, `add_image(s)`,
    `add_figure`, `add_text`, `add_graph`, `add_hparams`, `add_embedding`, `flush`, `close`;
    a context manager (closes on exit)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if not log_dir:
            now = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", now + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = S.default_bins()

    def _get_file_writer(self) -> FileWriter:
        """The default FileWriter (made again after close)."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # TensorBoard drops events at or after this step from earlier runs of the dir
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    # -- scalars -------------------------------------------------------------------------------
    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False) -> None:
        self._get_file_writer().add_summary(
            S.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """One plot of several series: each series is a run `<log_dir>/<main_tag>_<tag>`."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(path)
            if fw is None:
                fw = self.all_writers[path] = FileWriter(path, self.max_queue,
                                                         self.flush_secs, self.filename_suffix)
            fw.add_summary(S.scalar(main_tag, value), global_step, walltime)

    # -- distributions ---------------------------------------------------------------------------
    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(S.histogram(tag, values, bins, max_bins),
                                            global_step, walltime)

    # -- images and text -----------------------------------------------------------------------
    def add_image(self, tag, img_tensor, global_step=None, walltime=None,
                  dataformats="CHW") -> None:
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats), global_step,
                                            walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW") -> None:
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats), global_step,
                                            walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """A matplotlib figure (or a list of them) as an image; needs matplotlib."""
        try:
            import matplotlib.pyplot as plt
            from matplotlib.backends.backend_agg import FigureCanvasAgg
        except ImportError as e:
            raise ImportError("add_figure() needs matplotlib: pip install matplotlib") from e

        def render(fig):
            canvas = FigureCanvasAgg(fig)
            canvas.draw()
            w, h = fig.canvas.get_width_height()
            data = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(h, w, 4)
            if close:
                plt.close(fig)
            return np.moveaxis(data[:, :, :3], 2, 0)

        if isinstance(figure, list):
            self.add_images(tag, np.stack([render(f) for f in figure]), global_step, walltime,
                            dataformats="NCHW")
        else:
            self.add_image(tag, render(figure), global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        self._get_file_writer().add_summary(S.text(tag, text_string), global_step, walltime)

    # -- graph, hparams, embeddings ------------------------------------------------------------
    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The IR of a scripted/traced function or module (a plain module is traced with
        `input_to_model`) as a GraphDef; `verbose` prints the IR."""
        g = graph_of(model, input_to_model)
        if verbose:
            print(g)
        self._get_file_writer().add_graph(graph_def(g))

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None) -> None:
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(),
                              run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for s in (exp, ssi, sei):
                w.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag="default", metadata_header=None) -> None:
        """Vectors for the projector: `<log_dir>/<step>/<tag>/tensors.tsv` (+ metadata.tsv,
        sprite.png) and an entry in `projector_config.pbtxt`."""
        from google.protobuf import text_format
        from tensorboard.plugins.projector.projector_config_pb2 import (EmbeddingInfo,
                                                                        ProjectorConfig)
        mat = S.make_np(mat)
        if global_step is None:
            global_step = 0
        subdir = f"{str(global_step).zfill(5)}/{_encode(tag)}"
        path = os.path.join(self._get_file_writer().get_logdir(), subdir)
        if os.path.isdir(path):
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        elif os.path.exists(path):
            raise NotADirectoryError(f"Path: `{path}` exists, but is a file. Cannot proceed.")
        else:
            os.makedirs(path)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data "
                                 "points")
        info = EmbeddingInfo(tensor_name=f"{tag}:{str(global_step).zfill(5)}",
                             tensor_path=subdir + "/tensors.tsv")
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _write_tsv(metadata, path, metadata_header)
            info.metadata_path = subdir + "/metadata.tsv"
        if label_img is not None:
            imgs = S.make_np(label_img)
            if imgs.shape[0] != mat.shape[0]:
                raise AssertionError("#images should equal with #data points")
            _write_sprite(imgs, path)
            info.sprite.image_path = subdir + "/sprite.png"
            info.sprite.single_image_dim.extend([imgs.shape[3], imgs.shape[2]])
        with open(os.path.join(path, "tensors.tsv"), "w") as f:
            for row in mat:
                f.write("\t".join(str(x.item()) for x in row) + "\n")
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([info])
        with open(os.path.join(self._get_file_writer().get_logdir(),
                               "projector_config.pbtxt"), "w") as f:
            f.write(text_format.MessageToString(self._projector_config))

    # -- lifetime -------------------------------------------------------------------------------
    def flush(self) -> None:
        for w in (self.all_writers or {}).values():
            w.flush()

    def close(self) -> None:
        if self.all_writers is None:
            return  # a second close does nothing
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _encode(raw: str) -> str:
    return raw.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _write_tsv(metadata, path, header) -> None:
    if header:
        if len(header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in "
                                 "metadata")
        lines = ["\t".join(str(e) for e in row) for row in [header] + list(metadata)]
    else:
        lines = [str(x) for x in metadata]
    with open(os.path.join(path, "metadata.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


def _write_sprite(imgs: np.ndarray, path) -> None:
    """The projector's sprite: the images tiled in a square grid, as one PNG."""
    nrow = int(np.ceil(imgs.shape[0] ** 0.5))
    grid = S.make_grid(imgs, ncols=nrow)  # CHW
    side = grid.shape[2]
    square = np.zeros((side, side, grid.shape[0]))
    hwc = grid.transpose(1, 2, 0)
    square[:hwc.shape[0]] = hwc
    png = S.encode_png(np.ascontiguousarray(np.uint8((square * 255).clip(0, 255))))
    with open(os.path.join(path, "sprite.png"), "wb") as f:
        f.write(png)
