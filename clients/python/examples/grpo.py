"""One GRPO / PPO-clip step on a batch, for the built-in model (the math of the Java demo trainer).

    A_i = (r_i − mean_g) / (std_g + 1e-6) per group g (unbiased std; A = 0 when std_g < 1e-6 or |g| = 1)
    ratio_t = exp(log π_θ(x_t) − logprobs_t)               logprobs_t: the behaviour (sampling) logprob
    loss = −Σ_t min(ratio_t·A, clip(ratio_t, 1−ε, 1+ε)·A) / N     N: trained tokens in the batch
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

import numpy as np
import torch

from rollout_client import Batch

STD_EPSILON = 1e-6


@dataclass
class StepStats:
    reward: float
    tokens: int
    clip_fraction: float
    grad_norm: float


def advantages(batch: Batch) -> np.ndarray:
    """Per row, in collate() order: the reward normalised within its group, never across groups."""
    out: List[np.ndarray] = []
    for g in batch.groups:
        r = g.tensors["rewards"].astype(np.float64)
        if r.size < 2:
            out.append(np.zeros_like(r))
            continue
        std = r.std(ddof=1)
        out.append(np.zeros_like(r) if std < STD_EPSILON else (r - r.mean()) / (std + STD_EPSILON))
    return np.concatenate(out) if out else np.zeros(0)


def policy_loss(model: torch.nn.Module, batch: Batch, temperature: float, clip_eps: float) -> "tuple[torch.Tensor, StepStats, int]":
    """The PPO-clip loss of ``batch`` summed over its tokens (divide by the tokens of the whole batch
    when shards are trained apart), its statistics, and its trained token count."""
    t: Dict[str, torch.Tensor] = batch.to_torch()
    ids = t["input_ids"]
    trained = (t["loss_mask"][:, 1:] != 0) & t["attention_mask"][:, 1:]
    tokens = int(trained.sum())
    adv = torch.from_numpy(advantages(batch))[:, None]
    rewards = t["rewards"].double()
    if tokens == 0:
        zero = sum(p.sum() * 0 for p in model.parameters())
        return zero, StepStats(float(rewards.mean()) if rewards.numel() else 0.0, 0, 0.0, 0.0), 0
    logp = model.next_token_logprobs(ids, temperature)
    behaviour = t["logprobs"][:, 1:].double()
    ratio = torch.exp(logp - behaviour)
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv
    objective = torch.minimum(unclipped, clipped)
    loss = -(objective * trained).sum()
    was_clipped = (((adv > 0) & (ratio > 1 + clip_eps)) | ((adv < 0) & (ratio < 1 - clip_eps))) & trained
    stats = StepStats(
        reward=float(rewards.mean()),
        tokens=tokens,
        clip_fraction=float(was_clipped.sum()) / tokens,
        grad_norm=0.0,
    )
    return loss, stats, tokens
