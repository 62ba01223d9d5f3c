"""The storage format of attention arrays, written and read in one place (pure: numpy only).

AttentionDiagnostic stores float16 arrays as zlib-compressed .npy bytes: `weights` with shape
[layers, heads, tokens, tokens] and `rollout` with shape [tokens, tokens]. The explanation step
writes them (explanations.services.explain), the evidence page reads them
(reviews.attention_data, one layer/head at a time)."""

from __future__ import annotations

import io
import zlib

import numpy as np

# zlib's default level, spelled out: stored diagnostics are compared byte for byte in tests.
COMPRESSION_LEVEL = 6


class AttentionDataError(ValueError):
    """A stored diagnostic that cannot be read, or a layer/head that does not exist."""


def encode_array(array: np.ndarray) -> bytes:
    """float16 .npy bytes, zlib-compressed: the storage format of AttentionDiagnostic."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array, dtype=np.float16), allow_pickle=False)
    return zlib.compress(buffer.getvalue(), level=COMPRESSION_LEVEL)


def decode_array(blob: bytes | memoryview) -> np.ndarray:
    """The array stored by encode_array (float16); AttentionDataError when it cannot be read."""
    try:
        raw = zlib.decompress(bytes(blob))
        return np.load(io.BytesIO(raw), allow_pickle=False)
    except (zlib.error, ValueError, OSError) as exc:
        raise AttentionDataError(f"The stored attention array cannot be read: {exc}") from exc
