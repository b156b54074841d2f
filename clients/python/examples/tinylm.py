"""The engine's built-in model (docs/model-server.md) in PyTorch: its weight file and its log-probabilities.

    logits(next | x_1..x_t) = b + P[x_t] + Cᵀ·h(x_1..x_t),   h = h_raw / ‖h_raw‖,
    h_raw = Σ_k λ^(t−k) · onehot(x_k),                       p_T = softmax(logits / T)

Weight file ``.rlm`` v1, little-endian: ``RLTINYLM`` · i32 format 1 · i32 V (263) · f32 λ · i32
version · b f32[V] · P f32[V·V] · C f32[V·V] · u32 CRC32 of everything before it. Written
atomically (temporary file, fsync, rename), as the model server expects.
"""

from __future__ import annotations

import os
import struct
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np
import torch

MAGIC = b"RLTINYLM"
V = 263
_HEAD = struct.Struct("<8siifi")


@dataclass
class TinyLmWeights:
    """The model's parameters as float32 numpy arrays, its λ and its RL weight version."""

    version: int
    decay: float
    bias: np.ndarray  # [V]
    bigram: np.ndarray  # [V, V], row = previous token
    context: np.ndarray  # [V, V], row = context token

    @staticmethod
    def read(path: Union[str, Path]) -> "TinyLmWeights":
        """Reads and checks a weight file; ``ValueError`` names the path and the defect."""
        raw = Path(path).read_bytes()
        size = _HEAD.size + 4 * V + 8 * V * V + 4
        if raw[:8] != MAGIC:
            raise ValueError(f"{path}: not a tiny-lm weight file (magic {raw[:8]!r})")
        if len(raw) != size:
            raise ValueError(f"{path}: {len(raw)} bytes, a v1 file of V={V} has {size}")
        magic, fmt, vocab, decay, version = _HEAD.unpack_from(raw)
        if fmt != 1 or vocab != V:
            raise ValueError(f"{path}: format {fmt}, V={vocab} (this reader knows format 1, V={V})")
        (crc,) = struct.unpack_from("<I", raw, size - 4)
        if zlib.crc32(raw[: size - 4]) != crc:
            raise ValueError(f"{path}: CRC32 mismatch")
        floats = np.frombuffer(raw, dtype="<f4", count=V + 2 * V * V, offset=_HEAD.size)
        return TinyLmWeights(
            version=version,
            decay=float(decay),
            bias=floats[:V].copy(),
            bigram=floats[V : V + V * V].reshape(V, V).copy(),
            context=floats[V + V * V :].reshape(V, V).copy(),
        )

    def write(self, path: Union[str, Path]) -> Path:
        """Writes atomically; returns the absolute path."""
        path = Path(path).absolute()
        body = _HEAD.pack(MAGIC, 1, V, self.decay, self.version) + b"".join(
            np.ascontiguousarray(a, dtype="<f4").tobytes() for a in (self.bias, self.bigram, self.context)
        )
        body += struct.pack("<I", zlib.crc32(body))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path


class TinyLm(torch.nn.Module):
    """The model as torch parameters (float64 for the arithmetic; stored as float32)."""

    def __init__(self, w: TinyLmWeights) -> None:
        super().__init__()
        self.decay = w.decay
        self.bias = torch.nn.Parameter(torch.from_numpy(w.bias.astype(np.float64)))
        self.bigram = torch.nn.Parameter(torch.from_numpy(w.bigram.astype(np.float64)))
        self.context = torch.nn.Parameter(torch.from_numpy(w.context.astype(np.float64)))

    def next_token_logprobs(self, input_ids: torch.Tensor, temperature: float) -> torch.Tensor:
        """``[R, W-1]``: log p_T(x_{t+1} | x_1..x_t) for t = 0..W-2 of every row of ``input_ids`` [R, W]
        (right padding is harmless: a position only sees the tokens before it)."""
        ids = input_ids.long()
        rows, width = ids.shape
        onehot = torch.nn.functional.one_hot(ids, V).to(torch.float64)  # [R, W, V]
        if self.decay == 1.0:
            bag = onehot.cumsum(dim=1)
        else:
            t = torch.arange(width, dtype=torch.float64)
            powers = torch.tril(self.decay ** (t[:, None] - t[None, :]).clamp(min=0))
            bag = torch.einsum("tk,rkv->rtv", powers, onehot)
        h = bag / bag.norm(dim=2, keepdim=True).clamp(min=1e-300)
        logits = self.bias + self.bigram[ids] + h @ self.context  # [R, W, V]: predicts position t+1
        temp = temperature if temperature >= 1e-6 else 1.0
        logp = torch.log_softmax(logits[:, :-1] / temp, dim=2)
        return logp.gather(2, ids[:, 1:, None]).squeeze(2)

    def weights(self, version: int) -> TinyLmWeights:
        """The current parameters as a weight snapshot labelled ``version``."""
        return TinyLmWeights(
            version=version,
            decay=self.decay,
            bias=self.bias.detach().numpy().astype(np.float32),
            bigram=self.bigram.detach().numpy().astype(np.float32),
            context=self.context.detach().numpy().astype(np.float32),
        )

    @torch.no_grad()
    def round_to_float32(self) -> None:
        """Makes the parameters exactly what the weight file holds (the servers sample from those)."""
        for p in self.parameters():
            p.copy_(p.float().double())
