"""The trained drafters as engine drafters (engine.drafter protocol: propose / release).

Role: adapters between the engine's decode loop and the networks of engine.lm.parallel / engine.lm.eagle.
They get the target's hidden states explicitly (`uses_hidden`: the loop hands each propose an
engine.drafter.TargetHidden, the committed positions its previous verify forward computed, as vLLM's EAGLE
proposer gets `target_hidden_states`), hold those not consumed yet per request (`_Pending`), keep their own
per-request caches of what they derived from them (context keys/values per draft layer), and draft γ tokens
with the exact distributions they sampled from. A request's features are consumed up to its committed
positions < len(tokens) − 1.

- A request's FIRST step has no target features yet (its prompt is prefilled by that step's verify
  forward): the block attends to no context (parallel) / the head gets a zero feature (EAGLE). The drafts
  are poor but still exact samples of the returned q, so verification stays lossless.
- The parallel block always has the size it was trained with (cfg.gamma; attention inside the block is
  bidirectional, so its outputs depend on the block size); a smaller γ uses its first γ slots.
- Sampling: q_k = engine.sampling.probs_from_logits(logits_k, the request's params), token = race(q_k,
  exponentials[:, k]); DSpark's logits_k = U_k + B_k left to right with the sampled x_{k−1} (and, for the
  rnn head, its state carried through the block).
- Confidence conf[r, k] depends only on tokens before position k: DSpark's head σ(z_k / T_k) with its STS
  temperatures T (1 = raw); DFlash and EAGLE report max_v q_k(v) (a function of the prefix only).
  `Proposal.raw_conf` (and `last_raw_conf`) carry the raw head output of a proposal (STS fitting data).

May import: torch, stdlib, engine.drafter, engine.sampling, engine.lm.*.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.drafter import Proposal, TargetHidden
from engine.lm.eagle import EagleDrafter
from engine.lm.parallel import ParallelDrafter
from engine.model import TinyLM
from engine.sampling import probs_from_logits, race


class _Slots:
    """Per-request slots of a drafter cache, and how many committed positions each has consumed."""

    def __init__(self, slots: int) -> None:
        self.free = list(range(slots - 1, -1, -1))
        self.slot: dict[int, int] = {}
        self.done: dict[int, int] = {}

    def get(self, rid: int) -> tuple[int, bool]:
        """(slot, seen before)."""
        if rid in self.slot:
            return self.slot[rid], True
        if not self.free:
            raise ValueError("drafter: no free cache slot (raise slots to the engine's max_running)")
        self.slot[rid] = self.free.pop()
        self.done[rid] = 0
        return self.slot[rid], False

    def release(self, rid: int) -> None:
        if rid in self.slot:
            self.free.append(self.slot.pop(rid))
            self.done.pop(rid, None)


class _Pending:
    """Per request, the handed-over hidden states float[n, L, d] of positions first .. first + n − 1 that the
    drafter has not consumed yet (contiguous: each step hands over the positions right after the last)."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[int, torch.Tensor]] = {}

    def add(self, reqs: Sequence, hidden: TargetHidden) -> None:
        if len(hidden.states) != len(reqs):
            raise ValueError(
                f"drafter: hidden states for {len(hidden.states)} requests, {len(reqs)} proposed"
            )
        for req, first, states in zip(reqs, hidden.starts, hidden.states):
            if len(states) == 0:
                continue
            if req.rid not in self.rows:
                self.rows[req.rid] = (first, states)
                continue
            have, old = self.rows[req.rid]
            if have + len(old) != first:
                raise ValueError(
                    f"drafter: request {req.rid}: hidden states from {first}, expected {have + len(old)}"
                )
            self.rows[req.rid] = (have, torch.cat([old, states]))

    def take(self, rid: int, start: int, stop: int) -> torch.Tensor:
        """float[stop − start, L, d] of positions [start, stop); those before `stop` are dropped."""
        have, states = self.rows.get(rid, (start, None))
        if states is None or not have <= start <= stop <= have + len(states):
            raise ValueError(f"drafter: request {rid}: no hidden states of positions [{start}, {stop})")
        self.rows[rid] = (stop, states[stop - have :])
        return states[start - have : stop - have]


class _Base:
    uses_hidden = True  # the engine hands propose the target's hidden states (engine.drafter.TargetHidden)

    def __init__(self, net, target: TinyLM, *, slots: int, max_len: int) -> None:
        self.device = target.w["tok"].device  # tensors of a proposal live where the target's weights do
        self.net, self.target = net.to(self.device).eval(), target
        self.max_len = max_len
        self.slots = _Slots(slots)
        self.pending = _Pending()
        c = target.config
        self.heads, self.dh = c.n_heads, c.head_dim
        self.last_raw_conf: torch.Tensor | None = None

    @property
    def vocab_size(self) -> int:
        return self.target.config.vocab_size

    def release(self, rid: int) -> None:
        self.slots.release(rid)
        self.pending.rows.pop(rid, None)

    def _cache(self, layers: int) -> tuple[torch.Tensor, torch.Tensor]:
        shape = (layers, len(self.slots.free) + len(self.slots.slot), self.heads, self.max_len, self.dh)
        return torch.zeros(shape, device=self.device), torch.zeros(shape, device=self.device)

    def propose(
        self, reqs: Sequence, gamma: int, exponentials: torch.Tensor, hidden: TargetHidden | None = None
    ) -> Proposal:
        """engine.drafter protocol; `hidden`: the target's hidden states of what the previous verify forward
        committed (None: nothing new, e.g. a first step)."""
        if hidden is not None:
            self.pending.add(reqs, hidden)
        with torch.device(self.device), torch.no_grad():
            return self._propose(reqs, gamma, exponentials)


class ParallelBlockDrafter(_Base):
    """DFlash / DSpark drafting: one block pass over [anchor, MASK × (γ−1)], then (DSpark) the Markov head
    left to right. `temps`: STS temperatures float64[γ'] of the confidence head (positions past γ' use 1)."""

    def __init__(self, net: ParallelDrafter, target: TinyLM, *, slots: int, max_len: int, temps=None):
        super().__init__(net, target, slots=slots, max_len=max_len)
        self.ck, self.cv = self._cache(len(net.blocks))
        self.temps = None if temps is None else torch.as_tensor(temps, dtype=torch.float64)

    def _propose(self, reqs: Sequence, gamma: int, exponentials: torch.Tensor) -> Proposal:
        r, v = len(reqs), self.vocab_size
        toks = torch.zeros((r, gamma), dtype=torch.int64)
        probs = torch.zeros((r, gamma, v))
        conf = torch.zeros((r, gamma), dtype=torch.float64)
        if r == 0 or gamma == 0:
            return Proposal(toks, probs, conf)
        own, ctx_len, anchor, anchor_pos, feats, where = [], [], [], [], [], []
        for req in reqs:
            tokens = req.tokens
            slot, seen = self.slots.get(req.rid)
            start, stop = self.slots.done[req.rid], (len(tokens) - 1 if seen else 0)
            if stop > start:
                feats.append(self.pending.take(req.rid, start, stop))
                where += [(slot, p) for p in range(start, stop)]
            self.slots.done[req.rid] = stop
            own.append(slot)
            ctx_len.append(stop)
            anchor.append(tokens[-1])
            anchor_pos.append(len(tokens) - 1)
        if feats:
            kv = self.net.context_kv(torch.cat(feats).float(), torch.tensor([w[1] for w in where]))
            s_idx = torch.tensor([w[0] for w in where])
            p_idx = torch.tensor([w[1] for w in where])
            for i, (k, vv) in enumerate(kv):
                self.ck[i, s_idx, :, p_idx] = k
                self.cv[i, s_idx, :, p_idx] = vv
        own_t, ctx_t = torch.tensor(own), torch.tensor(ctx_len)
        anchor_t = torch.tensor(anchor)
        k_len = max(int(ctx_t.max()), 1)
        ck = [self.ck[i, own_t, :, :k_len] for i in range(self.ck.shape[0])]
        cv = [self.cv[i, own_t, :, :k_len] for i in range(self.cv.shape[0])]
        # The block is bidirectional, so its outputs depend on its size: always run the trained size.
        block = max(gamma, self.net.cfg.gamma)
        h, u = self.net.draft_hidden(anchor_t, torch.tensor(anchor_pos), ck, cv, ctx_t, block)
        params = [q.params for q in reqs]
        prev, state = anchor_t, None
        raw = torch.zeros((r, gamma), dtype=torch.float64)
        for k in range(gamma):
            logits = u[:, k]
            if self.net.has_markov:
                bias, z, state = self.net.markov_step(h[:, k], prev, state)
                logits = logits + bias
                raw[:, k] = torch.sigmoid(z.double())
                t_k = self.temps[k] if self.temps is not None and k < self.temps.numel() else 1.0
                conf[:, k] = torch.sigmoid(z.double() / t_k)
            q = probs_from_logits(logits, params)
            if not self.net.has_markov:
                conf[:, k] = q.max(dim=-1).values.double()
                raw[:, k] = conf[:, k]
            probs[:, k] = q
            toks[:, k] = race(q, exponentials[:, k])
            prev = toks[:, k]
        self.last_raw_conf = raw
        return Proposal(toks, probs, conf, raw)


class EagleHeadDrafter(_Base):
    """EAGLE drafting: new committed pairs (f_t, x_{t+1}) are appended to the head's cache, then γ chained
    single-token passes on its own predicted features."""

    def __init__(self, net: EagleDrafter, target: TinyLM, *, slots: int, max_len: int) -> None:
        super().__init__(net, target, slots=slots, max_len=max_len)
        self.ck, self.cv = self._cache(1)

    def _propose(self, reqs: Sequence, gamma: int, exponentials: torch.Tensor) -> Proposal:
        net, r, v = self.net, len(reqs), self.vocab_size
        toks = torch.zeros((r, gamma), dtype=torch.int64)
        probs = torch.zeros((r, gamma, v))
        conf = torch.zeros((r, gamma), dtype=torch.float64)
        if r == 0 or gamma == 0:
            return Proposal(toks, probs, conf)
        d = self.target.config.d_model
        own, n_old, rows = [], [], []
        for req in reqs:
            tokens = req.tokens
            slot, seen = self.slots.get(req.rid)
            start = self.slots.done[req.rid]
            n_old.append(start)
            if seen:  # pairs t = start .. L−2 with real features
                f = self.pending.take(req.rid, start, len(tokens) - 1)[:, net.feature_layer].float()
                nxt = tokens[start + 1 :]
                self.slots.done[req.rid] = len(tokens) - 1
            else:  # first step: one uncached pair with a zero feature
                f, nxt, start = torch.zeros(1, d), tokens[-1:], len(tokens) - 2
            own.append(slot)
            rows.append((f, torch.tensor(nxt), torch.arange(start + 1, start + 1 + len(nxt)), seen))
        width = max(len(x[1]) for x in rows)
        feat, tok, pos = (
            torch.zeros(r, width, d),
            torch.zeros(r, width, dtype=torch.int64),
            torch.zeros(r, width, dtype=torch.int64),
        )
        n_new = torch.tensor([len(x[1]) for x in rows])
        for i, (f, t, p, _) in enumerate(rows):
            feat[i, : len(t)], tok[i, : len(t)], pos[i, : len(t)] = f, t, p
        own_t, old_t = torch.tensor(own), torch.tensor(n_old)
        u = net.pair_input(feat, tok, pos)
        k_len = max(int(old_t.max()), 1)
        ck, cv = self.ck[0, own_t, :, :k_len], self.cv[0, own_t, :, :k_len]
        idx = torch.arange(width)
        mask = torch.cat(
            [
                (torch.arange(k_len)[None, :] < old_t[:, None])[:, None, :].expand(r, width, k_len),
                (idx[None, :] <= idx[:, None])[None].expand(r, width, width),
            ],
            dim=2,
        )[:, None]
        out = net.attend(u, ck, cv, mask, pos)
        new_k, new_v = net.keys(u, pos)  # [R, H, W, Dh]
        for i, (_, t, _, seen) in enumerate(rows):
            if seen:
                n = len(t)
                self.ck[0, own[i], :, n_old[i] : n_old[i] + n] = new_k[i, :, :n]
                self.cv[0, own[i], :, n_old[i] : n_old[i] + n] = new_v[i, :, :n]
        have = torch.tensor([n_old[i] + (len(x[1]) if x[3] else 0) for i, x in enumerate(rows)])
        cur = out[torch.arange(r), n_new - 1][:, None]  # [R, 1, d]: predicted f_{L−1}
        base_k = self.ck[0, own_t, :, : max(int(have.max()), 1)]
        base_v = self.cv[0, own_t, :, : max(int(have.max()), 1)]
        base_vis = torch.arange(base_k.shape[2])[None, :] < have[:, None]
        chain_k, chain_v = [], []
        anchor_pos = torch.tensor([len(q.tokens) - 1 for q in reqs])
        params = [q.params for q in reqs]
        for k in range(gamma):
            q = probs_from_logits(net.frozen.logits(cur[:, 0]), params)
            probs[:, k] = q
            conf[:, k] = q.max(dim=-1).values.double()
            toks[:, k] = race(q, exponentials[:, k])
            if k + 1 == gamma:
                break
            pos_k = (anchor_pos + 1 + k)[:, None]
            u_k = net.pair_input(cur, toks[:, k : k + 1], pos_k)
            ck = torch.cat([base_k, *chain_k], dim=2)
            cv = torch.cat([base_v, *chain_v], dim=2)
            vis = torch.cat([base_vis, torch.ones(r, len(chain_k) + 1, dtype=torch.bool)], dim=1)[
                :, None, None, :
            ]
            cur = net.attend(u_k, ck, cv, vis, pos_k)
            kk, vv = net.keys(u_k, pos_k)
            chain_k.append(kk)
            chain_v.append(vv)
        self.last_raw_conf = conf.clone()
        return Proposal(toks, probs, conf, self.last_raw_conf)


def runtime_drafter(net, target: TinyLM, *, slots: int, max_len: int, temps=None):
    """The engine drafter for a trained network (ParallelDrafter or EagleDrafter)."""
    if isinstance(net, EagleDrafter):
        return EagleHeadDrafter(net, target, slots=slots, max_len=max_len)
    return ParallelBlockDrafter(net, target, slots=slots, max_len=max_len, temps=temps)
