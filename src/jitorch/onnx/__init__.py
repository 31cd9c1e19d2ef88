"""`jitorch.onnx`: importable, so scripts that import it run; exporting a model to ONNX is not
implemented and says so (NotImplementedError naming it), as the issue's rule for missing
features asks."""
from __future__ import annotations

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError"]


class OnnxExporterError(RuntimeError):
    pass


def export(model, args=(), f=None, *posargs, **kwargs):
    raise NotImplementedError(
        "jitorch.onnx.export is not implemented: jitorch has no ONNX exporter (save weights with "
        "jitorch.save(model.state_dict(), path), or a scripted module with jitorch.jit.save)")


def dynamo_export(*args, **kwargs):
    raise NotImplementedError("jitorch.onnx.dynamo_export is not implemented: jitorch has no "
                              "ONNX exporter")


def is_in_onnx_export() -> bool:
    return False
