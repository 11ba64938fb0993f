"""The target model: a trainable twin of engine.model.TinyLM, and a TinyLM that exposes its hidden states.

Role: `TargetLM` (torch.nn.Module) trains with exactly TinyLM's architecture and weight names (pre-norm
blocks, fused qkv, learned absolute positions, GELU MLP, untied head, no biases in the projections), so
`TargetLM.tiny()` hands the engine an ordinary `TinyLM`. `FeatureTarget` is that TinyLM plus one thing the
drafters need: while the engine runs its (verify) forward, it keeps the residual stream after every block
at every position it computes, in `features: float[slots, max_len, n_layers, d]` indexed like the engine's
KV cache (slot, absolute position). A position's features are final once it is committed, exactly like its
keys and values; the drafters only ever read committed positions (< the request's length − 1).

`FeatureTarget.forward` re-implements TinyLM.forward (same math; logits equal up to float rounding, checked
by a test) because TinyLM does not return hidden states (see the report's request to the engine owner), and
packs the valid tokens of a ragged batch instead of padding every row to the longest one.

May import: torch, stdlib, engine.model.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from engine.model import KVCache, ModelConfig, TinyLM


def _block_names(i: int) -> tuple[str, ...]:
    return tuple(f"h.{i}.{n}" for n in ("ln1.w", "ln1.b", "qkv", "o", "ln2.w", "ln2.b", "fc1", "fc2"))


def weight_shapes(c: ModelConfig) -> dict[str, tuple[int, ...]]:
    """TinyLM's weight names and shapes."""
    d, ff = c.d_model, c.d_ff or 4 * c.d_model
    shapes: dict[str, tuple[int, ...]] = {"tok": (c.vocab_size, d), "pos": (c.max_len, d)}
    for i in range(c.n_layers):
        for name, shape in zip(
            _block_names(i), ((d,), (d,), (d, 3 * d), (d, d), (d,), (d,), (d, ff), (ff, d))
        ):
            shapes[name] = shape
    shapes.update({"lnf.w": (d,), "lnf.b": (d,), "head": (d, c.vocab_size)})
    return shapes


def _key(name: str) -> str:
    return name.replace(".", "__")  # ParameterDict keys may not contain dots


class TargetLM(nn.Module):
    """Trainable TinyLM twin. `forward(tokens[B, T]) -> (logits[B, T, V], hidden[B, T, L, d])`."""

    def __init__(self, config: ModelConfig, gen: torch.Generator) -> None:
        super().__init__()
        self.config = config
        params = {}
        for name, shape in weight_shapes(config).items():
            if name.endswith(".w"):
                t = torch.ones(shape)
            elif name.endswith(".b"):
                t = torch.zeros(shape)
            else:
                std = 0.02
                if name.endswith((".o", ".fc2")):
                    std = 0.02 / math.sqrt(2 * config.n_layers)  # GPT-2 style residual scaling
                t = torch.randn(shape, generator=gen) * std
            params[_key(name)] = nn.Parameter(t)
        self.p = nn.ParameterDict(params)

    def w(self, name: str) -> torch.Tensor:
        return self.p[_key(name)]

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        c = self.config
        b, t = tokens.shape
        x = self.w("tok")[tokens] + self.w("pos")[:t]
        hidden = []
        for i in range(c.n_layers):
            h = F.layer_norm(x, (c.d_model,), self.w(f"h.{i}.ln1.w"), self.w(f"h.{i}.ln1.b"))
            q, k, v = (h @ self.w(f"h.{i}.qkv")).view(b, t, 3, c.n_heads, c.head_dim).unbind(2)
            out = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
            )
            x = x + out.transpose(1, 2).reshape(b, t, c.d_model) @ self.w(f"h.{i}.o")
            h = F.layer_norm(x, (c.d_model,), self.w(f"h.{i}.ln2.w"), self.w(f"h.{i}.ln2.b"))
            x = x + F.gelu(h @ self.w(f"h.{i}.fc1")) @ self.w(f"h.{i}.fc2")
            hidden.append(x)
        x = F.layer_norm(x, (c.d_model,), self.w("lnf.w"), self.w("lnf.b"))
        return x @ self.w("head"), torch.stack(hidden, dim=2)

    def weights(self) -> dict[str, torch.Tensor]:
        """Detached copies under TinyLM's names."""
        return {name: self.w(name).detach().clone() for name in weight_shapes(self.config)}


@torch.no_grad()
def target_outputs(weights: dict[str, torch.Tensor], config: ModelConfig, tokens: torch.Tensor):
    """(probs float[B, T, V] at temperature 1, hidden float[B, T, L, d]) of a frozen target (no cache)."""
    model = TargetLM.__new__(TargetLM)
    nn.Module.__init__(model)
    model.config = config
    model.p = nn.ParameterDict({_key(k): nn.Parameter(v, requires_grad=False) for k, v in weights.items()})
    logits, hidden = model(tokens)
    return torch.softmax(logits, dim=-1), hidden


class FeatureTarget(TinyLM):
    """A TinyLM whose forward also records every block's output per (slot, position) in `features`."""

    def __init__(self, config: ModelConfig, weights: dict[str, torch.Tensor]) -> None:
        super().__init__(config, weights)
        self.features: torch.Tensor | None = None

    def _buffer(self, cache: KVCache) -> torch.Tensor:
        c = self.config
        shape = (cache.k.shape[1], cache.max_len, c.n_layers, c.d_model)
        if self.features is None or tuple(self.features.shape) != shape:
            self.features = torch.zeros(shape, dtype=cache.k.dtype, device=cache.k.device)
        return self.features

    @torch.no_grad()
    def forward(
        self, tokens: torch.Tensor, n_valid: torch.Tensor, slots: torch.Tensor, cache: KVCache
    ) -> torch.Tensor:
        """TinyLM.forward's contract and math (logits equal up to float rounding), computed on the valid
        tokens only: the projections and MLPs run on the packed [N_valid, d] rows, as varlen engines do, so
        a step costs what its Σ(1 + ℓ_r) tokens cost, not R × the longest row (attention stays padded:
        cheap at these sizes). Padding rows of the returned logits are 0. Records block outputs."""
        c = self.config
        feats = self._buffer(cache)
        r, s = tokens.shape
        start = cache.lengths[slots]
        if r and int((start + n_valid).max()) > cache.max_len:
            raise ValueError(f"forward: a request would exceed the cache length {cache.max_len}")
        offs = torch.arange(s, device=tokens.device)
        pos = start[:, None] + offs[None, :]
        valid = offs[None, :] < n_valid[:, None]
        rows, cols = valid.nonzero(as_tuple=True)  # packed order: request-major
        pos_p, slot_p = pos[rows, cols], slots[rows]
        x = self.w["tok"][tokens[rows, cols]] + self.w["pos"][pos_p.clamp(max=c.max_len - 1)]  # [N, d]
        kv_len = int((start + n_valid).max()) if r else 0
        key_pos = torch.arange(kv_len, device=tokens.device)
        visible = key_pos[None, None, None, :] <= pos[:, None, :, None]  # [R, 1, S, T]
        n = x.shape[0]
        for i in range(c.n_layers):
            h = F.layer_norm(x, (c.d_model,), self.w[f"h.{i}.ln1.w"], self.w[f"h.{i}.ln1.b"])
            q, k, v = (h @ self.w[f"h.{i}.qkv"]).view(n, 3, c.n_heads, c.head_dim).unbind(1)
            cache.k[i, slot_p, :, pos_p] = k
            cache.v[i, slot_p, :, pos_p] = v
            keys = cache.k[i, slots, :, :kv_len]  # [R, H, T, Dh]
            values = cache.v[i, slots, :, :kv_len]
            qp = q.new_zeros(r, s, c.n_heads, c.head_dim)
            qp[rows, cols] = q
            scores = (qp.transpose(1, 2) @ keys.transpose(2, 3)) / math.sqrt(c.head_dim)  # [R, H, S, T]
            att = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
            out = (att @ values).transpose(1, 2)[rows, cols].reshape(n, c.d_model)
            x = x + out @ self.w[f"h.{i}.o"]
            h = F.layer_norm(x, (c.d_model,), self.w[f"h.{i}.ln2.w"], self.w[f"h.{i}.ln2.b"])
            x = x + F.gelu(h @ self.w[f"h.{i}.fc1"]) @ self.w[f"h.{i}.fc2"]
            feats[slot_p, pos_p, i] = x
        x = F.layer_norm(x, (c.d_model,), self.w["lnf.w"], self.w["lnf.b"])
        logits = x.new_zeros(r, s, c.vocab_size)
        logits[rows, cols] = x @ self.w["head"]
        return logits

    def read(self, slot: int, start: int, stop: int) -> torch.Tensor:
        """Recorded block outputs float[stop − start, L, d] of positions [start, stop) of `slot`."""
        if self.features is None:
            raise ValueError("FeatureTarget.read: no forward has run yet")
        return self.features[slot, start:stop]
