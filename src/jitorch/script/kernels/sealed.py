"""The seal on jitorch's binary cache files: `magic + SHA-256(payload) + payload`.

A file is read only through `unseal`, which checks the magic and the digest before anything
parses the payload: a truncated, bit-flipped or foreign file is refused, never half-read. Used by
Numba's program cache files (numba_cache), the programs' bytecode files (cache._compiled) and
the generated-code table of `import jitorch` (jitorch/_code_cache.py). It checks against damage,
not against a writer who means harm (docs/security.md: the cache directory is the user's).
A light module: no Numba.
"""
from __future__ import annotations

import hashlib

__all__ = ["seal", "unseal"]

_DIGEST = 32


def seal(magic: bytes, payload: bytes) -> bytes:
    return magic + hashlib.sha256(payload).digest() + payload


def unseal(magic: bytes, data: bytes | None) -> bytes | None:
    """The payload of sealed `data`, or None (missing, another magic, damaged)."""
    head = len(magic) + _DIGEST
    if data is None or len(data) < head or not data.startswith(magic):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(magic):head]:
        return None
    return payload
