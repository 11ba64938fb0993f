"""DFlash-style parallel block drafter and DSpark (the same backbone + Markov head + confidence head).

Role: the network and its training loss. A block anchored at position a (the last committed token, whose
target features do not exist yet) is [x_a, MASK × (γ−1)] at positions a..a+γ−1; slot j predicts token
x_{a+j+1}. Context = RMSNorm(fc[H(l1); …; H(ln)]) of the target's block outputs at positions < a, injected
as keys/values into every draft layer ("KV injection"); the block attends bidirectionally to itself. The
target's token/position embeddings and output head are frozen (engine.lm.layers.Frozen); the mask
embedding, fc, the layers, the final norm and the heads are trained.

DSpark (dspark.md §1.2–1.3, §2): p_k = softmax(U_k + B_k) with the Markov bias B_k = W2·W1[x_{k−1}]
("vanilla"), W2·(σ(G[h_k; W1[x_{k−1}]]) ⊙ W1[x_{k−1}]) ("gated") or the RNN head of the paper's Eq. 6
("rnn": [g; c; o] = R[s_{k−1}; W1[x_{k−1}]; h_k] + b, s_k = σ(g)⊙s_{k−1} + (1−σ(g))⊙tanh(c), s_0 = 0,
B_k = W2·tanh(o): a state that carries the whole drafted prefix, not just the previous byte), x_{k−1} the
previous block token (the anchor for k = 1; teacher-forced data tokens in training, the sampled drafts at
inference). W2 starts at zero, so an untrained head leaves the backbone unchanged. Confidence
c_k = σ(wᵀ[h_k; W1[x_{k−1}]] + b) (rnn: σ(wᵀ[h_k; W1[x_{k−1}]; s_k] + b)), trained toward
c*_k = clamp(1 − ½‖p_d − p_t‖₁, 0, 1) (detached); with `conf_detach` its inputs are detached too, so the
BCE term trains the confidence head only and never pulls on the backbone or the Markov head. Loss
0.1·CE + 0.9·L1 + 1.0·BCE, each a mean weighted by exp(−k/decay) over the valid positions of each block.
DFlash: no Markov or confidence head; trained with the same distillation loss minus BCE (0.1·CE + 0.9·L1),
so the comparison isolates the Markov head (the paper's DFlash uses CE on target-regenerated data, which is
the same signal).

May import: torch, stdlib, engine.model, engine.lm.layers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.lm.layers import (
    DraftConfig,
    DraftLayer,
    Frozen,
    init_linear,
    position_weights,
    rms_norm,
    weighted_mean,
)
from engine.model import ModelConfig


class ParallelDrafter(nn.Module):
    """DFlash (markov="none") or DSpark backbone with heads. See the module docstring."""

    def __init__(
        self, cfg: DraftConfig, tcfg: ModelConfig, target_weights: dict, gen: torch.Generator
    ) -> None:
        super().__init__()
        if cfg.kind not in ("dflash", "dspark"):
            raise ValueError(f"ParallelDrafter: kind must be dflash or dspark, got {cfg.kind!r}")
        if max(cfg.feature_layers) >= tcfg.n_layers:
            raise ValueError(f"DraftConfig field 'feature_layers': target has {tcfg.n_layers} layers")
        self.cfg, self.tcfg = cfg, tcfg
        d, v, r = tcfg.d_model, tcfg.vocab_size, cfg.rank
        self.frozen = Frozen(target_weights)
        self.mask_emb = nn.Parameter(torch.randn(d, generator=gen) * 0.02)
        self.fc = init_linear(gen, d * len(cfg.feature_layers), d)
        self.ctx_norm = nn.Parameter(torch.ones(d))
        scale = 1.0 / (2 * cfg.layers) ** 0.5
        self.blocks = nn.ModuleList(
            DraftLayer(d, tcfg.n_heads, cfg.d_ff or 2 * d, gen, scale) for _ in range(cfg.layers)
        )
        self.norm_w = nn.Parameter(target_weights["lnf.w"].detach().float().clone())
        self.norm_b = nn.Parameter(target_weights["lnf.b"].detach().float().clone())
        self.has_markov = cfg.markov != "none"
        if self.has_markov:
            self.w1 = nn.Parameter(torch.randn(v, r, generator=gen) * 0.1)
            self.w2 = nn.Parameter(torch.zeros(r, v))
            if cfg.markov == "gated":
                self.gate = init_linear(gen, d + r, r)
                self.gate_b = nn.Parameter(torch.zeros(r))
            conf_in = d + r
            if cfg.markov == "rnn":
                self.rnn = init_linear(gen, 2 * r + d, 3 * r)
                self.rnn_b = nn.Parameter(torch.zeros(3 * r))
                conf_in += r
            self.conf_w = nn.Parameter(torch.zeros(conf_in))
            self.conf_b = nn.Parameter(torch.zeros(()))

    # -- pieces shared by training and inference ------------------------------------------------------------

    def context(self, hidden: torch.Tensor) -> torch.Tensor:
        """Context states [..., d] from target block outputs `hidden: [..., L_target, d]`."""
        feats = hidden[..., list(self.cfg.feature_layers), :].flatten(-2)
        return rms_norm(feats @ self.fc, self.ctx_norm)

    def block_input(self, anchor: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """[N, γ, d] block inputs: token embedding of `anchor: int64[N]` then mask embeddings, plus the
        frozen position embeddings of `positions: int64[N, γ]`."""
        gamma = positions.shape[-1]
        first = self.frozen.tok[anchor][:, None, :]
        rest = self.mask_emb.expand(anchor.shape[0], gamma - 1, -1)
        pos = self.frozen.pos[positions.clamp(max=self.tcfg.max_len - 1)]
        return torch.cat([first, rest], dim=1) + pos

    def final(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(h = the drafter's final norm of x, backbone logits U = h @ frozen head)."""
        h = F.layer_norm(x, (x.shape[-1],), self.norm_w, self.norm_b)
        return h, h @ self.frozen.head

    def markov_step(self, h: torch.Tensor, prev: torch.Tensor, state: torch.Tensor | None = None):
        """(bias B_k [..., V], confidence logit [...], state s_k [..., r] or None) at one block position from
        the drafter's hidden `h: [..., d]`, the previous tokens `prev: int64[...]` and (rnn) the state
        s_{k−1} (None = s_0 = 0; the other variants keep no state and return None)."""
        e = self.w1[prev]
        if self.cfg.markov == "rnn":
            if state is None:
                state = h.new_zeros(*h.shape[:-1], self.cfg.rank)
            g, c, o = (torch.cat([state, e, h], dim=-1) @ self.rnn + self.rnn_b).chunk(3, dim=-1)
            keep = torch.sigmoid(g)
            state = keep * state + (1 - keep) * torch.tanh(c)
            feats = torch.cat([h, e, state], dim=-1)
            out = torch.tanh(o)
        else:
            feats = torch.cat([h, e], dim=-1)
            out = torch.sigmoid(feats @ self.gate + self.gate_b) * e if self.cfg.markov == "gated" else e
        if self.cfg.conf_detach:
            feats = feats.detach()
        return out @ self.w2, feats @ self.conf_w + self.conf_b, state

    def markov(self, h: torch.Tensor, prev: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Whole blocks, teacher-forced: (bias [..., γ, V], confidence logits [..., γ]) for `h: [..., γ, d]`
        and `prev: int64[..., γ]` (block position k's previous token; the rnn state runs left to right)."""
        if self.cfg.markov != "rnn":
            bias, z, _ = self.markov_step(h, prev)
            return bias, z
        state, biases, zs = None, [], []
        for k in range(h.shape[-2]):
            bias, z, state = self.markov_step(h[..., k, :], prev[..., k], state)
            biases.append(bias)
            zs.append(z)
        return torch.stack(biases, dim=-2), torch.stack(zs, dim=-1)

    # -- training --------------------------------------------------------------------------------------------

    def blocks_forward(self, tokens: torch.Tensor, hidden: torch.Tensor, anchors: torch.Tensor):
        """Training-mode backbone: (h [B, A, γ, d], U [B, A, γ, V]) of the blocks anchored at
        `anchors: int64[B, A]`, all in one pass (each block sees the context before its anchor and itself)."""
        b, t = tokens.shape
        gamma, a_n = self.cfg.gamma, anchors.shape[1]
        pos = anchors[..., None] + torch.arange(gamma)  # [B, A, γ]
        x = self.block_input(tokens.gather(1, anchors).reshape(-1), pos.reshape(-1, gamma))
        x = x.view(b, a_n * gamma, -1)
        ctx = self.context(hidden)
        key_t = torch.arange(t)
        ctx_mask = key_t[None, None, :] < anchors.repeat_interleave(gamma, dim=1)[:, :, None]  # [B, Aγ, T]
        same = torch.arange(a_n).repeat_interleave(gamma)
        blk_mask = (same[:, None] == same[None, :]).expand(b, -1, -1)
        mask = torch.cat([ctx_mask, blk_mask], dim=2)[:, None]
        ctx_pos = torch.arange(t).expand(b, -1) if self.cfg.rope else None
        blk_pos = pos.reshape(b, -1) if self.cfg.rope else None
        for blk in self.blocks:
            ck, cv = blk.project_kv(ctx, ctx_pos)
            x = blk(x, ck, cv, mask, blk_pos)
        return self.final(x.view(b, a_n, gamma, -1))

    def loss(self, tokens: torch.Tensor, probs: torch.Tensor, hidden: torch.Tensor, gen: torch.Generator):
        """(loss, metrics) on a batch: tokens int64[B, T], target probs float[B, T, V] (row t predicts
        x_{t+1}), target block outputs float[B, T, L, d]; `cfg.anchors` random anchors per sequence."""
        cfg = self.cfg
        b, t = tokens.shape
        gamma, a_n = cfg.gamma, cfg.anchors
        anchors = torch.randint(1, t - 1, (b, a_n), generator=gen)  # a in [1, T−2]: context non-empty
        pos = anchors[..., None] + torch.arange(gamma)  # [B, A, γ]
        valid = pos <= t - 2  # label x_{pos+1} and target row pos exist
        flat = pos.clamp(max=t - 2).reshape(b, -1)
        h, logits = self.blocks_forward(tokens, hidden, anchors)
        prev = tokens.gather(1, flat).view(b, a_n, gamma)  # x_{a+j}: anchor at j = 0
        labels = tokens.gather(1, flat + 1).view(b, a_n, gamma)
        p_t = probs.gather(1, flat[..., None].expand(-1, -1, probs.shape[-1])).view(b, a_n, gamma, -1)
        conf_logit = None
        if self.has_markov:
            bias, conf_logit = self.markov(h, prev)
            logits = logits + bias
        logp = torch.log_softmax(logits, dim=-1)
        ce = -logp.gather(-1, labels[..., None]).squeeze(-1)
        l1 = (logp.exp() - p_t).abs().sum(-1)
        w = position_weights(gamma, cfg.decay)
        loss = 0.1 * weighted_mean(ce, w, valid) + 0.9 * weighted_mean(l1, w, valid)
        accept = (1 - 0.5 * l1).clamp(0, 1).detach()
        metrics = {"ce": weighted_mean(ce, w, valid).item(), "accept": accept[valid].mean().item()}
        if conf_logit is not None:
            bce = F.binary_cross_entropy_with_logits(conf_logit, accept, reduction="none")
            loss = loss + weighted_mean(bce, w, valid)
            metrics["bce"] = weighted_mean(bce, w, valid).item()
        return loss, metrics

    # -- inference -------------------------------------------------------------------------------------------

    @torch.no_grad()
    def context_kv(self, hidden: torch.Tensor, pos: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per draft layer (k, v) float[N, H, Dh] of N context positions (`hidden: [N, L_target, d]` at
        absolute positions `pos: int64[N]`; keys rotated there when cfg.rope)."""
        ctx = self.context(hidden)[None]
        rot = pos[None] if self.cfg.rope else None
        out = []
        for blk in self.blocks:
            k, v = blk.project_kv(ctx, rot)
            out.append((k[0].transpose(0, 1), v[0].transpose(0, 1)))
        return out

    @torch.no_grad()
    def draft_hidden(self, anchor, anchor_pos, ctx_k, ctx_v, ctx_len, gamma: int):
        """(h [R, γ, d], U [R, γ, V]) of one block pass. anchor/anchor_pos/ctx_len: int64[R]; ctx_k/ctx_v:
        per layer float[R, H, K, Dh] (entries at index >= ctx_len[r] are ignored)."""
        r = anchor.shape[0]
        pos = anchor_pos[:, None] + torch.arange(gamma, device=anchor.device)
        x = self.block_input(anchor, pos)
        k_len = ctx_k[0].shape[2]
        ctx_vis = torch.arange(k_len, device=anchor.device)[None, :] < ctx_len[:, None]  # [R, K]
        mask = torch.cat(
            [
                ctx_vis[:, None, :].expand(r, gamma, k_len),
                torch.ones(r, gamma, gamma, dtype=torch.bool, device=anchor.device),
            ],
            dim=2,
        )[:, None]
        rot = pos if self.cfg.rope else None
        for blk, ck, cv in zip(self.blocks, ctx_k, ctx_v):
            x = blk(x, ck, cv, mask, rot)
        return self.final(x)
