"""Building blocks shared by the drafters: a pre-norm transformer layer with injected keys/values, RMSNorm,
the frozen pieces borrowed from the target, and the drafter configuration.

Role: one `DraftLayer` serves training (batched, an explicit boolean attention mask over [context keys;
block keys]) and inference (the same math on cached context keys); its key/value projection `kv` is applied
both to the layer's own inputs and to injected context states (DFlash/DSpark "KV injection").

May import: torch, stdlib, engine.model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

KINDS = ("eagle", "dflash", "dspark")
MARKOV = ("none", "vanilla", "gated", "rnn")


@dataclass(frozen=True)
class DraftConfig:
    """A drafter. kind: "eagle" (autoregressive one-layer head on the target's last hidden state),
    "dflash" (parallel block: anchor + γ−1 masks, one pass, context = several target layers), "dspark"
    (the same backbone + Markov head + confidence head). layers: draft transformer layers. gamma: the block
    size it is trained for. feature_layers: target blocks (0-based outputs) feeding the parallel context.
    markov: "none" | "vanilla" (B = W2·W1[x]) | "gated" | "rnn" (engine.lm.parallel); rank: r of W1 (V×r),
    W2 (r×V) and the rnn state. conf_detach: the confidence head trains on detached inputs. d_ff: MLP width
    (0 = 2·d). ttt: EAGLE's training-time-test depth (extra unrolled chained passes). decay: position
    weights exp(−k/decay) of the losses. anchors: block anchors per training sequence. rope: rotary
    position embedding of queries and keys in the draft layers (as the Qwen3 layers the paper copies)."""

    kind: str = "dspark"
    layers: int = 2
    gamma: int = 7
    feature_layers: tuple[int, ...] = (0, 1, 2)
    markov: str = "vanilla"
    rank: int = 32
    d_ff: int = 0
    ttt: int = 2
    decay: float = 4.0
    anchors: int = 24
    rope: bool = True
    conf_detach: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"DraftConfig field 'kind': one of {KINDS}, got {self.kind!r}")
        if self.markov not in MARKOV:
            raise ValueError(f"DraftConfig field 'markov': one of {MARKOV}, got {self.markov!r}")
        if self.kind != "dspark" and self.markov != "none":
            raise ValueError(
                f"DraftConfig field 'markov': only dspark has a Markov head (kind {self.kind!r})"
            )
        for name in ("layers", "gamma", "rank", "anchors"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"DraftConfig field '{name}': must be >= 1, got {getattr(self, name)}")
        if self.ttt < 0 or self.d_ff < 0 or not self.decay > 0:
            raise ValueError("DraftConfig fields 'ttt', 'd_ff' must be >= 0 and 'decay' > 0")
        if not self.feature_layers or min(self.feature_layers) < 0:
            raise ValueError(
                f"DraftConfig field 'feature_layers': non-empty, >= 0, got {self.feature_layers}"
            )

    @property
    def name(self) -> str:
        """Checkpoint/report name, e.g. "dspark2" or "eagle1"."""
        return f"{self.kind}{self.layers}"


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def init_linear(gen: torch.Generator, fan_in: int, fan_out: int, scale: float = 1.0) -> nn.Parameter:
    return nn.Parameter(torch.randn(fan_in, fan_out, generator=gen) * (scale / math.sqrt(fan_in)))


def rope(x: torch.Tensor, pos: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary embedding of `x: [B, H, N, Dh]` at absolute positions `pos: int64[B, N]` (half-split pairs)."""
    half = x.shape[-1] // 2
    freq = base ** (-torch.arange(half, dtype=torch.float32, device=x.device) / half)
    ang = pos[:, None, :, None].to(torch.float32) * freq  # [B, 1, N, half]
    cos, sin = torch.cos(ang), torch.sin(ang)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


class DraftLayer(nn.Module):
    """Pre-norm attention + GELU MLP. `forward(x[B, Q, d], ctx_k, ctx_v, mask, pos=None)`: queries are x's
    rows; keys/values = [ctx_k/ctx_v (B, H, K, Dh) ; projections of x]; mask: bool [B, 1, Q, K + Q] (True =
    may attend). With `pos: int64[B, Q]` the queries and x's own keys are rotated (RoPE) at those positions;
    injected context keys must then come rotated at theirs (`project_kv(states, pos)`)."""

    def __init__(self, d: int, heads: int, d_ff: int, gen: torch.Generator, out_scale: float) -> None:
        super().__init__()
        self.d, self.heads, self.dh = d, heads, d // heads
        self.ln1_w, self.ln1_b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.ln2_w, self.ln2_b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.q = init_linear(gen, d, d)
        self.kv = init_linear(gen, d, 2 * d)
        self.o = init_linear(gen, d, d, out_scale)
        self.fc1 = init_linear(gen, d, d_ff)
        self.fc2 = init_linear(gen, d_ff, d, out_scale)

    def project_kv(self, states: torch.Tensor, pos: torch.Tensor | None = None):
        """Keys and values (B, H, N, Dh) of already-normalized `states: [B, N, d]` (keys rotated at `pos`)."""
        b, n, _ = states.shape
        k, v = (states @ self.kv).view(b, n, 2, self.heads, self.dh).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        return (k if pos is None else rope(k, pos)), v

    def forward(self, x, ctx_k, ctx_v, mask, pos: torch.Tensor | None = None) -> torch.Tensor:
        b, q_len, d = x.shape
        h = F.layer_norm(x, (d,), self.ln1_w, self.ln1_b)
        q = (h @ self.q).view(b, q_len, self.heads, self.dh).transpose(1, 2)
        if pos is not None:
            q = rope(q, pos)
        k, v = self.project_kv(h, pos)
        keys, values = torch.cat([ctx_k, k], dim=2), torch.cat([ctx_v, v], dim=2)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)  # every row sees its own key
        x = x + out.transpose(1, 2).reshape(b, q_len, d) @ self.o
        h = F.layer_norm(x, (d,), self.ln2_w, self.ln2_b)
        return x + F.gelu(h @ self.fc1) @ self.fc2


class Frozen(nn.Module):
    """The target's token/position embeddings, final norm and head, as buffers (never trained or saved)."""

    def __init__(self, weights: dict[str, torch.Tensor]) -> None:
        super().__init__()
        for name in ("tok", "pos", "lnf.w", "lnf.b", "head"):
            self.register_buffer(
                name.replace(".", "_"), weights[name].detach().float().clone(), persistent=False
            )

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """The target's own output head: LN_f(x) @ head."""
        return F.layer_norm(x, (x.shape[-1],), self.lnf_w, self.lnf_b) @ self.head


def position_weights(gamma: int, decay: float) -> torch.Tensor:
    """w_k = exp(−k/decay), k = 0..γ−1 (the paper's position-decayed loss weights)."""
    return torch.exp(-torch.arange(gamma, dtype=torch.float32) / decay)


def weighted_mean(values: torch.Tensor, weights: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Σ w·v / Σ w over valid entries (weights broadcast over the last dim = positions)."""
    w = weights * valid.float()
    return (values * w).sum() / w.sum().clamp_min(1e-9)
