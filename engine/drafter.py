"""Drafters: anything that proposes γ tokens per request with the distributions they were sampled from and
a confidence per position. `ModelDrafter` is a small draft model (TinyLM) with its own KV cache.

Protocol (what engine.loop calls):
    propose(reqs, gamma, exponentials[, hidden=TargetHidden]) -> Proposal
        reqs: the running requests (`.rid`, `.tokens` = prompt + committed output, `.params`);
        exponentials: float64 [R, γ, V], the Exp(1) noise to sample draft position k with (engine.noise
        keys it; in coupled mode it is the target's own noise for that absolute position);
        hidden: only for drafters whose `uses_hidden` is True: the target's hidden states of the positions
        the previous step's verify forward computed and committed, per request (as vLLM's EAGLE proposer
        receives `target_hidden_states`); the drafter keeps what it has not consumed yet.
    release(rid) -> None: the request left the batch; drop its state.
    observe(rids, lengths, accepted) -> None (optional): after each verify, the verify lengths ℓ and the
        accepted counts of the last proposal, for drafters that calibrate their confidence online.
Proposal.probs[r, k] must be exactly the distribution tokens[r, k] was drawn from (the sampling module's
output for the request's SamplingParams), and conf[r, k] may depend only on the drafts before position k
(conf is read by the scheduler before the token at k is verified: using q(d_k) itself, or anything drawn
after it, would let the admission of d_k depend on d_k -- the lookahead bias of the paper's Appendix A).

ModelDrafter's confidence is the draft distribution's max probability at position k, a function of the
prefix only; with `calibration_bins` > 0 it is mapped through an online histogram calibration (acceptance
frequency of past verified positions per max-probability bin, shrunk towards the overall rate), which uses
only outcomes of earlier steps and so stays non-anticipating. Its cache rolls back by keeping the longest
common prefix of what it has cached and the request's committed tokens; tokens it has not seen (the bonus,
or the last accepted draft) are fed, ragged, in the first draft forward of the next step.

May import: torch, stdlib, engine.model, engine.sampling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from engine.model import KVCache, TinyLM
from engine.sampling import probs_from_logits, race


@dataclass
class Proposal:
    """tokens int64 [R, γ]; probs float [R, γ, V] (what each token was sampled from); conf float64 [R, γ];
    raw_conf float64 [R, γ] or None: the drafter's confidences before any calibration (None: same as conf)."""

    tokens: torch.Tensor
    probs: torch.Tensor
    conf: torch.Tensor
    raw_conf: torch.Tensor | None = None

    def padded(self, gamma: int) -> Proposal:
        """This proposal (drafted to depth g ≤ γ by a draft-aware schedule) padded with zeros to γ positions;
        the padding is never verified (ℓ ≤ depth ≤ g)."""
        pad = gamma - self.tokens.shape[1]
        if pad == 0:
            return self
        f = torch.nn.functional.pad
        raw = None if self.raw_conf is None else f(self.raw_conf, (0, pad))
        return Proposal(f(self.tokens, (0, pad)), f(self.probs, (0, 0, 0, pad)), f(self.conf, (0, pad)), raw)

    def placed(self, rows: torch.Tensor, depths: torch.Tensor, n: int, gamma: int) -> Proposal:
        """A proposal of n requests × γ positions: request rows[i] gets this proposal's row i (drafted to
        its depth g ≤ γ), every other request and every position k ≥ depths[rows[i]] holds zeros (masked:
        nothing was drafted there for that request, and ℓ_r ≤ depth_r never verifies it).
        rows: int64[m] on this proposal's device; depths: int64[n] there."""
        keep = torch.arange(self.tokens.shape[1], device=rows.device)[None, :] < depths[rows][:, None]

        def put(x: torch.Tensor) -> torch.Tensor:
            out = x.new_zeros((n, gamma, *x.shape[2:]))
            mask = keep.reshape(*keep.shape, *([1] * (x.dim() - 2)))
            out[rows, : x.shape[1]] = torch.where(mask, x, torch.zeros((), dtype=x.dtype, device=x.device))
            return out

        raw = None if self.raw_conf is None else put(self.raw_conf)
        return Proposal(put(self.tokens), put(self.probs), put(self.conf), raw)


@dataclass(frozen=True)
class TargetHidden:
    """The target's hidden states handed to a drafter, aligned with the propose call's `reqs`: request i's
    committed positions starts[i] .. starts[i] + n_i − 1 (absolute: prompt + output) that the previous step's
    verify forward computed, as states[i] float[n_i, L, d] (the residual stream after every block; n_i = 0
    for a request no forward has seen yet). Each committed position is handed over exactly once."""

    starts: tuple[int, ...]
    states: tuple[torch.Tensor, ...]

    @staticmethod
    def committed(states: torch.Tensor, first: Sequence[int], n_fed: Sequence[int], lengths: Sequence[int]):
        """Per request r, (first[r], float[lengths[r] − first[r], L, d]): of the packed (request-major)
        states float[N, L, d] a forward computed for n_fed[r] positions from first[r] on, those of the
        positions now committed (< lengths[r]; the rest were rejected drafts)."""
        offs = np.cumsum([0, *n_fed[:-1]]).tolist()
        return [(c, states[o : o + n - c]) for o, c, n in zip(offs, first, lengths)]

    @classmethod
    def of(cls, kept: Sequence[tuple[int, torch.Tensor] | None], like: torch.Tensor) -> TargetHidden:
        """From per-request `committed` pairs (None: nothing computed yet; an empty float[0, L, d] then, of
        `like`'s dtype and device, like = the KV cache float[L, slots, H, T, Dh])."""
        empty = torch.zeros(
            (0, like.shape[0], like.shape[2] * like.shape[4]), dtype=like.dtype, device=like.device
        )
        pairs = [(0, empty) if k is None else k for k in kept]
        return cls(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


class HiddenRelay:
    """The loop's side of TargetHidden: `computed` = the last forward's packed hidden states float[N, L, d];
    `keep` picks each running request's newly committed ones (added to what it has not handed yet: a request
    the plan gave depth 0 skips the drafter), `hand` gives them to the next propose of those requests."""

    def __init__(self) -> None:
        self.computed: torch.Tensor | None = None
        self.kept: dict[int, tuple[int, torch.Tensor]] = {}  # rid -> (first position, states)

    def keep(self, rids: Sequence[int], first: Sequence[int], n_fed: Sequence[int], lengths: Sequence[int]):
        """The forward computed n_fed[r] positions of request rids[r] (the running ones) from first[r] on;
        those < lengths[r] are now committed. Requests no longer running are dropped."""
        kept = {}
        for rid, (start, new) in zip(rids, TargetHidden.committed(self.computed, first, n_fed, lengths)):
            old = self.kept.get(rid)
            kept[rid] = (start, new) if old is None else (old[0], torch.cat([old[1], new]))
        self.kept = kept

    def hand(self, rids: Sequence[int], like: torch.Tensor) -> TargetHidden:
        """What `rids` committed since they were last handed theirs (then forgotten here)."""
        return TargetHidden.of([self.kept.pop(rid, None) for rid in rids], like)


class Drafter(Protocol):
    def propose(self, reqs: Sequence, gamma: int, exponentials: torch.Tensor) -> Proposal: ...

    def release(self, rid: int) -> None: ...


def pad_batch(seqs: Sequence[Sequence[int]], device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Ragged token lists -> (tokens int64 [R, S] padded with 0, n_valid int64 [R])."""
    width = max(max((len(s) for s in seqs), default=0), 1)
    rows = [list(s) + [0] * (width - len(s)) for s in seqs]
    tokens = torch.tensor(rows, dtype=torch.int64).reshape(len(seqs), width)
    n_valid = torch.tensor([len(s) for s in seqs], dtype=torch.int64)
    return tokens.to(device), n_valid.to(device)


class ModelDrafter:
    """A TinyLM drafter with slot-based KV cache and max-probability confidence."""

    def __init__(
        self, model: TinyLM, *, slots: int, max_len: int, device="cpu", calibration_bins: int = 0
    ) -> None:
        self.model = model
        self.bins = calibration_bins
        self._tries = np.zeros(max(calibration_bins, 1))
        self._hits = np.zeros(max(calibration_bins, 1))
        self._raw: dict[int, np.ndarray] = {}
        self.cache = KVCache(model.config, slots, max_len, device=device)
        self.device = device
        self._slot: dict[int, int] = {}
        self._cached: dict[int, list[int]] = {}
        self._free = list(range(slots - 1, -1, -1))

    @property
    def vocab_size(self) -> int:
        return self.model.config.vocab_size

    def release(self, rid: int) -> None:
        if rid in self._slot:
            self._free.append(self._slot.pop(rid))
            self._cached.pop(rid, None)
            self._raw.pop(rid, None)

    def _bin(self, raw: np.ndarray) -> np.ndarray:
        return np.minimum((raw * self.bins).astype(np.int64), self.bins - 1)

    def observe(self, rids: Sequence[int], lengths: Sequence[int], accepted: Sequence[int]) -> None:
        """Count, per raw-confidence bin, the verified positions that were tested and accepted."""
        if not self.bins:
            return
        for rid, ell, n in zip(rids, lengths, accepted):
            tested = min(int(ell), int(n) + 1)  # positions before the first rejection, and the rejected one
            if tested and rid in self._raw:
                b = self._bin(self._raw[rid][:tested])
                np.add.at(self._tries, b, 1.0)
                np.add.at(self._hits, b[: int(n)], 1.0)

    def _calibrated(self, raw: np.ndarray) -> np.ndarray:
        """(hits + 4·g) / (tries + 4) per bin, g = the overall acceptance so far (1/2 before any
        evidence): bins without evidence borrow the global rate, so low raw confidences still get verified
        and learned."""
        g = (self._hits.sum() + 1.0) / (self._tries.sum() + 2.0)
        b = self._bin(raw)
        return np.clip((self._hits[b] + 4.0 * g) / (self._tries[b] + 4.0), 0.0, 1.0)

    def _rollback(self, req) -> tuple[int, list[int]]:
        """The request's cache length after rolling back to the common prefix of what is cached and its
        committed tokens, and the tokens still to feed (>= 1)."""
        if req.rid not in self._slot:
            if not self._free:
                raise ValueError("ModelDrafter: no free cache slot (raise slots)")
            self._slot[req.rid] = self._free.pop()
            self._cached[req.rid] = []
        tokens, cached = req.tokens, self._cached[req.rid]
        common = 0
        limit = min(len(tokens), len(cached))
        while common < limit and tokens[common] == cached[common]:
            common += 1
        common = min(common, len(tokens) - 1)  # the last token is always fed: its logits draft position 0
        return common, list(tokens[common:])

    def propose(self, reqs: Sequence, gamma: int, exponentials: torch.Tensor) -> Proposal:
        r = len(reqs)
        vocab = self.vocab_size
        dtype = self.cache.k.dtype
        toks = torch.zeros((r, gamma), dtype=torch.int64, device=self.device)
        probs = torch.zeros((r, gamma, vocab), dtype=dtype, device=self.device)
        conf = torch.zeros((r, gamma), dtype=torch.float64, device=self.device)
        if gamma == 0 or r == 0:
            return Proposal(toks, probs, conf)
        rolled = [self._rollback(req) for req in reqs]
        feeds = [f for _, f in rolled]
        slots = torch.tensor([self._slot[req.rid] for req in reqs], dtype=torch.int64, device=self.device)
        self.cache.lengths[slots] = torch.tensor(
            [c for c, _ in rolled], dtype=torch.int64, device=self.device
        )
        params = [req.params for req in reqs]
        tokens, n_valid = pad_batch(feeds, self.device)
        ar = torch.arange(r, device=self.device)
        for k in range(gamma):
            logits = self.model.forward(tokens, n_valid, slots, self.cache)[ar, n_valid - 1]
            self.cache.lengths[slots] += n_valid
            q = probs_from_logits(logits, params)
            probs[:, k] = q
            conf[:, k] = q.max(dim=-1).values.to(torch.float64)  # from the prefix only, before d_k is drawn
            toks[:, k] = race(q, exponentials[:, k])
            if k + 1 < gamma:
                tokens, n_valid = toks[:, k : k + 1], torch.ones(r, dtype=torch.int64, device=self.device)
        drafted = toks[:, : gamma - 1].tolist()
        for i, req in enumerate(reqs):
            self._cached[req.rid] = list(req.tokens) + drafted[i]
        if self.bins:
            raw = conf.cpu().numpy()
            self._raw.update({req.rid: raw[i] for i, req in enumerate(reqs)})
            conf = torch.as_tensor(self._calibrated(raw), dtype=torch.float64, device=self.device)
        return Proposal(toks, probs, conf)
