"""EAGLE-style drafter: an autoregressive one-layer head on the target's last hidden state.

Role: the network and its training loss. Input pair t = (f_t, x_{t+1}): the target's last block output at
position t and the next token; u_t = fc[LN(f_t); E(x_{t+1})] + P(t+1) (E, P: the target's frozen token and
position embeddings). One causal transformer layer over the pairs outputs f̂_{t+1}, a prediction of the
target's next hidden state; logits = the target's own frozen LN_f and head applied to f̂_{t+1} (so a perfect
f̂ reproduces the target exactly). Drafting k > 1 feeds the head its own prediction: pair (f̂_{t+1}, d_k).

Training: 0.1·CE + 0.9·L1(p_draft, p_target) + SmoothL1(f̂, f) on every pair, plus `ttt` unrolled chained
depths (training-time test, as EAGLE-3): depth m's query at t uses the depth-(m−1) prediction of f_t and
attends to the real pairs at positions ≤ t − m and to the chain keys of depths 1..m at positions
t − m + 1..t: exactly what it sees at draft step m + 1. Depth losses are weighted exp(−m/decay).

May import: torch, stdlib, engine.model, engine.lm.layers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.lm.layers import DraftConfig, DraftLayer, Frozen, init_linear, position_weights, weighted_mean
from engine.model import ModelConfig


class EagleDrafter(nn.Module):
    """See the module docstring."""

    def __init__(
        self, cfg: DraftConfig, tcfg: ModelConfig, target_weights: dict, gen: torch.Generator
    ) -> None:
        super().__init__()
        if cfg.kind != "eagle" or cfg.layers != 1:
            raise ValueError(f"EagleDrafter: needs kind 'eagle' with layers 1, got {cfg.kind!r}/{cfg.layers}")
        self.cfg, self.tcfg = cfg, tcfg
        d = tcfg.d_model
        self.frozen = Frozen(target_weights)
        self.feat_w, self.feat_b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.fc = init_linear(gen, 2 * d, d)
        self.layer = DraftLayer(d, tcfg.n_heads, cfg.d_ff or 2 * d, gen, 0.5)
        self.feature_layer = tcfg.n_layers - 1

    def pair_input(self, feat: torch.Tensor, tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """u = fc[LN(feat); E(tok)] + P(pos): feat [..., d], tok/pos int64 [...] (pos = position of tok)."""
        f = F.layer_norm(feat, (feat.shape[-1],), self.feat_w, self.feat_b)
        u = torch.cat([f, self.frozen.tok[tok]], dim=-1) @ self.fc
        return u + self.frozen.pos[pos.clamp(max=self.tcfg.max_len - 1)]

    def keys(self, u: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's keys/values (B, H, N, Dh) of pair inputs u [B, N, d] at pair positions pos [B, N]."""
        lay = self.layer
        h = F.layer_norm(u, (u.shape[-1],), lay.ln1_w, lay.ln1_b)
        return lay.project_kv(h, pos if self.cfg.rope else None)

    def attend(self, u, ctx_k, ctx_v, mask, pos) -> torch.Tensor:
        """The layer over pair inputs u [B, Q, d] at positions pos [B, Q] (rotated keys in ctx_k)."""
        return self.layer(u, ctx_k, ctx_v, mask, pos if self.cfg.rope else None)

    def depth_outputs(self, tokens: torch.Tensor, hidden: torch.Tensor) -> list[torch.Tensor]:
        """Training-mode outputs f̂ [B, T−1, d] of every depth 0..ttt (pair t at position t+1; see the module
        docstring for what depth m's query at t attends to)."""
        b, t = tokens.shape
        n = t - 1  # pairs t = 0..T−2
        feat = hidden[:, :, self.feature_layer]
        nxt = tokens[:, 1:]
        pos = torch.arange(1, t).expand(b, -1)
        idx = torch.arange(n)
        inp = self.pair_input(feat[:, :n], nxt, pos)
        keys, values, outs = [], [], []
        empty = inp.new_zeros(b, self.layer.heads, 0, self.layer.dh)
        for m in range(self.cfg.ttt + 1):
            if m == 0:
                mask = (idx[None, :] <= idx[:, None])[None, None]  # causal over real pairs
                out = self.attend(inp, empty, empty, mask.expand(b, 1, n, n), pos)
            else:
                ck, cv = torch.cat(keys, dim=2), torch.cat(values, dim=2)
                parts = [idx[None, :] <= idx[:, None] - m]  # real pairs s <= t − m
                parts += [idx[None, :] == idx[:, None] - m + d for d in range(1, m)]  # chain keys
                parts.append(idx[None, :] == idx[:, None])  # own key (depth m)
                mask = torch.cat(parts, dim=1)[None, None].expand(b, 1, n, n * (m + 1))
                out = self.attend(inp, ck, cv, mask, pos)
            k, v = self.keys(inp, pos)
            keys.append(k)
            values.append(v)
            outs.append(out)
            # next depth: the prediction of f_t (made at t − 1) with token x_{t+1}
            shifted = torch.cat([torch.zeros_like(out[:, :1]), out[:, :-1]], dim=1)
            inp = self.pair_input(shifted, nxt, pos)
        return outs

    def loss(self, tokens: torch.Tensor, probs: torch.Tensor, hidden: torch.Tensor, gen: torch.Generator):
        """(loss, metrics): tokens int64[B, T], target probs [B, T, V], target block outputs [B, T, L, d]."""
        del gen  # deterministic: every pair is used
        b, t = tokens.shape
        n = t - 1
        idx = torch.arange(n)
        valid0 = (idx <= t - 3).expand(b, -1)  # the pair at t predicts x_{t+2} from target row t+1
        labels = tokens.new_zeros(b, n)
        labels[:, : n - 1] = tokens[:, 2:]
        rows = (idx + 1).clamp(max=t - 1)
        p_t = probs[:, rows]
        f_next = hidden[:, rows, self.feature_layer]
        total, w = 0.0, position_weights(self.cfg.ttt + 1, self.cfg.decay)
        metrics: dict[str, float] = {}
        one = torch.ones(())
        for m, out in enumerate(self.depth_outputs(tokens, hidden)):
            valid = valid0 & (idx >= m)
            logp = torch.log_softmax(self.frozen.logits(out), dim=-1)
            ce = -logp.gather(-1, labels[..., None]).squeeze(-1)
            l1 = (logp.exp() - p_t).abs().sum(-1)
            reg = F.smooth_l1_loss(out, f_next, reduction="none").mean(-1)
            term = 0.1 * weighted_mean(ce, one, valid) + 0.9 * weighted_mean(l1, one, valid)
            total = total + w[m] * (term + weighted_mean(reg, one, valid))
            metrics[f"accept{m}"] = float((1 - 0.5 * l1.detach()).clamp(0, 1)[valid].mean())
        metrics["accept"] = metrics["accept0"]
        return total / w.sum(), metrics
