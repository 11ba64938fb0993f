"""The target model for training: a thin use of the one transformer in engine.model.

Role: `TargetLM` (torch.nn.Module) trains engine.model's transformer (`block`, `embed`, `head`: same weight
names, same math) over full sequences with causal attention (`causal_forward`, also what `target_outputs`
runs for a frozen target), and `TargetLM.weights()` hands the engine an ordinary `TinyLM`'s weights. The
engine's target is that plain TinyLM: the decode loop asks its forward for the hidden states
(`TinyLM.run(..., hidden=True)`) and hands them to the drafters itself (engine.drafter.TargetHidden).

May import: torch, stdlib, engine.model.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from engine.model import ModelConfig, block, embed, head


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
        return causal_forward(
            {name: self.w(name) for name in weight_shapes(self.config)}, self.config, tokens
        )

    def weights(self) -> dict[str, torch.Tensor]:
        """Detached copies under TinyLM's names."""
        return {name: self.w(name).detach().clone() for name in weight_shapes(self.config)}


def causal_forward(w, c: ModelConfig, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits float[B, T, V], hidden float[B, T, L, d]) of `tokens: int64[B, T]` from position 0, causal
    attention, no cache: engine.model's blocks over whole sequences (training and frozen-target targets)."""

    def attend(q, k, v):  # [B, T, H, Dh] each
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        return out.transpose(1, 2)

    x = embed(tokens, torch.arange(tokens.shape[1], device=tokens.device), w, c)
    hidden = []
    for i in range(c.n_layers):
        x = block(x, w, i, c, attend)
        hidden.append(x)
    return head(x, w, c), torch.stack(hidden, dim=2)


@torch.no_grad()
def target_outputs(weights: dict[str, torch.Tensor], config: ModelConfig, tokens: torch.Tensor):
    """(probs float[B, T, V] at temperature 1, hidden float[B, T, L, d]) of a frozen target (no cache)."""
    logits, hidden = causal_forward(weights, config, tokens)
    return torch.softmax(logits, dim=-1), hidden
