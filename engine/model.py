"""The one small decoder-only transformer: its block, and a model with a batched, slot-based KV cache.

Role: the models the engine decodes with, and the math every other use shares: `block` (pre-norm attention
+ GELU MLP, attention supplied by the caller), `embed` and `head` are the architecture once; `TinyLM` runs
them over a KV cache and `engine.lm.target.TargetLM` (training) over full sequences with causal attention,
so both compute the same function of the same weight names (checkpoints are these names).
`TinyLM.forward` runs a ragged batch: request r feeds n_valid[r] new tokens that continue its cached
prefix, so prefill, plain decoding (1 token), drafting and verification (1 + ℓ tokens) are the same call.
Each request owns a cache slot whose length pointer (`KVCache.lengths`) is its number of committed cached
positions; the caller advances it after committing tokens and rolls it back after rejections. Entries at
positions >= the pointer are stale: every query attends only to keys at positions <= its own, and a
forward overwrites positions [length, length + n_valid) before reading them, so stale entries are never
seen. `TinyLM.run(..., hidden=True)` also returns every block's output of the valid tokens, explicitly
(the drafters' features). Weights come from a seeded torch.Generator (no global RNG), pre-norm blocks,
learned absolute positions, GELU MLP, untied output head. `truncated(n)` builds a draft of the same class
that shares the target's embeddings, first n blocks and head (a self-speculative draft).

May import: torch, stdlib.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch
import torch.nn.functional as F

DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class ModelConfig:
    """Sizes (tokens, channels) and init of a TinyLM. `init_scale` scales the residual-branch outputs
    (smaller: blocks perturb the embedding less, so a truncated draft agrees more); `logit_scale` sets the
    logit spread (larger: peakier next-token distributions)."""

    vocab_size: int = 256
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 0  # 0 -> 4 * d_model
    max_len: int = 512
    seed: int = 0
    init_scale: float = 1.0
    logit_scale: float = 3.0
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "max_len"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"ModelConfig field '{name}': must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"ModelConfig field 'n_heads': {self.n_heads} does not divide d_model={self.d_model}"
            )
        if self.d_ff < 0 or self.seed < 0:
            raise ValueError("ModelConfig fields 'd_ff' and 'seed': must be >= 0")
        if self.dtype not in DTYPES:
            raise ValueError(f"ModelConfig field 'dtype': one of {sorted(DTYPES)}, got {self.dtype!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


class KVCache:
    """Keys/values float[L, slots, H, max_len, Dh] and per-slot length pointers int64 [slots]."""

    def __init__(self, config: ModelConfig, slots: int, max_len: int, device="cpu") -> None:
        if max_len > config.max_len:
            raise ValueError(f"KVCache: max_len {max_len} exceeds the model's max_len {config.max_len}")
        shape = (config.n_layers, slots, config.n_heads, max_len, config.head_dim)
        dtype = DTYPES[config.dtype]
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.lengths = torch.zeros(slots, dtype=torch.int64, device=device)
        self.max_len = max_len


Weights = Mapping[str, torch.Tensor]


def block(x: torch.Tensor, w: Weights, i: int, c: ModelConfig, attend) -> torch.Tensor:
    """Pre-norm transformer block i: x + attn(LN1 x), then + MLP(LN2 x). `x: [..., d]` (any leading dims:
    packed tokens [N, d] in the engine, [B, T, d] in training); `attend(q, k, v) -> out`, all `[..., H, Dh]`
    with x's leading dims (the caller decides the keys: a KV cache, or causal over the sequence)."""
    lead = x.shape[:-1]
    h = F.layer_norm(x, (c.d_model,), w[f"h.{i}.ln1.w"], w[f"h.{i}.ln1.b"])
    q, k, v = (h @ w[f"h.{i}.qkv"]).view(*lead, 3, c.n_heads, c.head_dim).unbind(-3)
    x = x + attend(q, k, v).reshape(*lead, c.d_model) @ w[f"h.{i}.o"]
    h = F.layer_norm(x, (c.d_model,), w[f"h.{i}.ln2.w"], w[f"h.{i}.ln2.b"])
    return x + F.gelu(h @ w[f"h.{i}.fc1"]) @ w[f"h.{i}.fc2"]


def embed(tokens: torch.Tensor, pos: torch.Tensor, w: Weights, c: ModelConfig) -> torch.Tensor:
    """Token + learned absolute position embeddings `[..., d]` (positions clamped to the table)."""
    return w["tok"][tokens] + w["pos"][pos.clamp(max=c.max_len - 1)]


def head(x: torch.Tensor, w: Weights, c: ModelConfig) -> torch.Tensor:
    """Final norm and untied output head: logits `[..., V]`."""
    return F.layer_norm(x, (c.d_model,), w["lnf.w"], w["lnf.b"]) @ w["head"]


class Forward(NamedTuple):
    """One cached forward. logits float[R, S, V] (padding rows 0); hidden float[N, L, d]: the residual
    stream after every block of the N valid tokens in packed (request-major) order, at `slots[N]`,
    `positions[N]` (None unless asked for)."""

    logits: torch.Tensor
    hidden: torch.Tensor | None
    slots: torch.Tensor
    positions: torch.Tensor


class TinyLM:
    """Decoder-only transformer; inference only (no autograd)."""

    def __init__(self, config: ModelConfig, weights: dict[str, torch.Tensor] | None = None) -> None:
        self.config = config
        self.w = weights if weights is not None else _init_weights(config)

    def truncated(self, n_layers: int) -> TinyLM:
        """A draft model of the same class: this model's embeddings, first n_layers blocks and head."""
        if not 1 <= n_layers <= self.config.n_layers:
            raise ValueError(f"truncated: n_layers must be in [1, {self.config.n_layers}], got {n_layers}")
        keep = {k: v for k, v in self.w.items() if not k.startswith("h.") or int(k.split(".")[1]) < n_layers}
        return TinyLM(replace(self.config, n_layers=n_layers), keep)

    def forward(
        self, tokens: torch.Tensor, n_valid: torch.Tensor, slots: torch.Tensor, cache: KVCache
    ) -> torch.Tensor:
        """Logits float[R, S, V] for `tokens: int64 [R, S]` (row r valid in its first n_valid[r] entries;
        padding rows of the logits are 0), continuing each slot's cached prefix at position
        cache.lengths[slot]. Writes the valid keys/values; does not move the length pointers (the caller
        commits or rolls back)."""
        return self.run(tokens, n_valid, slots, cache).logits

    @torch.no_grad()
    def run(
        self,
        tokens: torch.Tensor,
        n_valid: torch.Tensor,
        slots: torch.Tensor,
        cache: KVCache,
        *,
        hidden=False,
        parents: torch.Tensor | None = None,
    ) -> Forward:
        """`forward` with its packed bookkeeping and (hidden=True) every block's output. The projections and
        MLPs run on the packed [N_valid, d] rows, as varlen engines do, so a step costs what its Σ(1 + ℓ_r)
        tokens cost, not R × the longest row; attention stays padded (cheap at these sizes).

        `parents` int64 [R, S] (a draft TREE, engine.tree_verify): token j > 0 of row r is a child of token
        parents[r, j] < j of the same row (entry 0 ignored: token 0 continues the cached prefix). Token j is
        then stored at cache position start + j but embedded at position start + depth(j), and attends to
        the cached prefix and to its own ancestors among the new tokens only (the tree attention mask).
        None: the chain (causal) path, unchanged."""
        c = self.config
        r, s = tokens.shape
        start = cache.lengths[slots]
        if r and int((start + n_valid).max()) > cache.max_len:
            raise ValueError(f"forward: a request would exceed the cache length {cache.max_len}")
        offs = torch.arange(s, device=tokens.device)
        pos = start[:, None] + offs[None, :]  # [R, S] absolute positions
        valid = offs[None, :] < n_valid[:, None]
        rows, cols = valid.nonzero(as_tuple=True)  # packed order: request-major
        pos_p, slot_p = pos[rows, cols], slots[rows]  # [N]
        kv_len = int((start + n_valid).max()) if r else 0
        key_pos = torch.arange(kv_len, device=tokens.device)
        visible = key_pos[None, None, None, :] <= pos[:, None, :, None]  # [R, 1, S, T]: causal over positions
        emb_pos = pos
        if parents is not None:
            emb_pos, visible = _tree_mask(parents, start, key_pos)

        def cached_attention(i: int):
            def attend(q, k, v):  # [N, H, Dh] each
                cache.k[i, slot_p, :, pos_p] = k
                cache.v[i, slot_p, :, pos_p] = v
                keys, values = cache.k[i, slots, :, :kv_len], cache.v[i, slots, :, :kv_len]  # [R, H, T, Dh]
                qp = q.new_zeros(r, s, c.n_heads, c.head_dim)
                qp[rows, cols] = q
                scores = (qp.transpose(1, 2) @ keys.transpose(2, 3)) / math.sqrt(c.head_dim)  # [R, H, S, T]
                att = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
                return (att @ values).transpose(1, 2)[rows, cols]  # [N, H, Dh]

            return attend

        x = embed(tokens[rows, cols], emb_pos[rows, cols], self.w, c)  # [N, d]
        states = []
        for i in range(c.n_layers):
            x = block(x, self.w, i, c, cached_attention(i))
            if hidden:
                states.append(x)
        logits = x.new_zeros(r, s, c.vocab_size)
        logits[rows, cols] = head(x, self.w, c)
        return Forward(logits, torch.stack(states, dim=1) if hidden else None, slot_p, pos_p)

    def logits_full(self, tokens: torch.Tensor) -> torch.Tensor:
        """Uncached logits float[R, S, V] for full sequences (a reference for the cache tests)."""
        r, s = tokens.shape
        cache = KVCache(self.config, r, max(s, 1), device=tokens.device)
        n = torch.full((r,), s, dtype=torch.int64, device=tokens.device)
        return self.forward(tokens, n, torch.arange(r, device=tokens.device), cache)


def _tree_mask(parents: torch.Tensor, start: torch.Tensor, key_pos: torch.Tensor):
    """(embedding positions int64 [R, S], visible bool [R, 1, S, T]) of a tree of new tokens (`run`)."""
    r, s = parents.shape
    anc = torch.eye(s, dtype=torch.bool, device=parents.device).expand(r, s, s).clone()
    depth = torch.zeros((r, s), dtype=torch.int64, device=parents.device)
    ar = torch.arange(r, device=parents.device)
    for j in range(1, s):
        par = parents[:, j].clamp(min=0, max=j - 1)
        anc[:, j] |= anc[ar, par]
        depth[:, j] = depth[ar, par] + 1
    rel = key_pos[None, :] - start[:, None]  # [R, T]: key index among the new tokens (< 0: cached prefix)
    inside = (rel >= 0) & (rel < s)
    tree = anc.gather(2, rel.clamp(0, s - 1)[:, None, :].expand(r, s, rel.shape[1])) & inside[:, None, :]
    visible = (rel < 0)[:, None, :] | tree
    return start[:, None] + depth, visible[:, None]


def _init_weights(c: ModelConfig) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(c.seed)
    dtype = DTYPES[c.dtype]
    d, ff = c.d_model, c.d_ff or 4 * c.d_model

    def normal(*shape: int, std: float) -> torch.Tensor:
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std).to(dtype)

    w = {"tok": normal(c.vocab_size, d, std=1.0), "pos": normal(c.max_len, d, std=0.5)}
    for i in range(c.n_layers):
        w[f"h.{i}.ln1.w"], w[f"h.{i}.ln1.b"] = torch.ones(d, dtype=dtype), torch.zeros(d, dtype=dtype)
        w[f"h.{i}.ln2.w"], w[f"h.{i}.ln2.b"] = torch.ones(d, dtype=dtype), torch.zeros(d, dtype=dtype)
        w[f"h.{i}.qkv"] = normal(d, 3 * d, std=1 / math.sqrt(d))
        w[f"h.{i}.o"] = normal(d, d, std=c.init_scale / math.sqrt(d))
        w[f"h.{i}.fc1"] = normal(d, ff, std=1 / math.sqrt(d))
        w[f"h.{i}.fc2"] = normal(ff, d, std=c.init_scale / math.sqrt(ff))
    w["lnf.w"], w["lnf.b"] = torch.ones(d, dtype=dtype), torch.zeros(d, dtype=dtype)
    w["head"] = normal(d, c.vocab_size, std=c.logit_scale / math.sqrt(d))
    return w
