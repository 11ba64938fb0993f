"""The decode loop: batched speculative decoding scheduled by a specsched policy, and plain decoding.

Role: each speculative step, every running request drafts γ tokens with their distributions and
confidences (any engine.drafter.Drafter); the shared policy (`specsched.make_policy`) turns conf
float64[R, γ] (plus, for `uses_stale` policies, the confidences of `delay` steps earlier) into verify
lengths; ONE batched target forward feeds each request's uncached committed tokens plus its first ℓ_r drafts;
the verifier emits accepted + 1 tokens; the KV length pointers are rolled back to the committed prefix.
Plain decoding is the same target forward with ℓ = 0 and the same sampling module.

Noise (engine.noise; a request's randomness never depends on the batch):
  - the token emitted at absolute position t by plain decoding, and the residual/bonus race of a
    speculative step starting at t, use key (seed, rid, t, SALT_SAMPLE), so policy "ar" reproduces plain
    decoding exactly;
  - standard mode: acceptance uniforms (seed, rid, t0, SALT_ACCEPT)[k] and draft noise
    (seed, rid, t0, SALT_DRAFT + k) for the step starting at t0 (fresh per step: a rejected step's draft
    noise is never reused);
  - coupled mode: the draft samples position t with the target's own noise (seed, rid, t, SALT_SAMPLE) and
    verification is sampler-match (engine.verify.match_verify), so the output equals plain decoding bit for
    bit under any policy, batching and drafter.
Stale confidences: stale[r] is request r's conf row from exactly `policy.delay` steps earlier, kept by
slot in the one `specsched.StaleBuffer` the simulator uses too; a request younger than that (its first
`delay` steps) uses the stated prior row `EngineConfig.stale_prior` (a constant or a population curve of γ
values; default 0.0: it brings no stale capacity of its own; draft="adaptive" refuses any 0 in it, which
would keep a young request from ever drafting there). Draft-aware policies (draft="adaptive") plan each
request's depth from those lagged rows BEFORE drafting; only the requests with depth > 0 are drafted, the
pass stops at the deepest planned depth, positions past a request's own depth are masked (never verified),
and only drafted positions are recorded (the rest hold the prior). Never its current row: sizing from
current confidences is the
lookahead bias. Verify lengths are then capped, value-blind, by the tokens the request may still emit.
Device: `EngineConfig.device` holds the KV cache, padded batches, noise keys and noise, and every tensor of a
step; the caller puts the models there (the Engine checks the target's weights, never moves them). The host
sees conf (float64 numpy, once per step, for the scheduler), the drafted and emitted tokens (the requests'
token lists) and the verify lengths (computed on the host by the policy); cache lengths are mirrored on the
host so building the feeds needs no device read.
Step output: every step returns a `StepOutput` (what was planned, verified, accepted and emitted, the
confidences, and the step's times on `EngineConfig.clock`); `generate` hands it to each of its `observers`
(callables), which is how measurement (engine.measure.rollout) and STS fitting see the loop without
touching it.
Hidden states: a drafter with `uses_hidden` gets, as `propose(..., hidden=TargetHidden)`, the target's hidden
states of the positions the previous step's verify forward computed and committed (drafter.HiddenRelay).

May import: torch, numpy, stdlib, specsched, engine.*.
(`Request`, `EngineConfig` and `make_planner` live in engine.config and are re-exported here.)
"""

from __future__ import annotations

import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

import specsched
from engine.config import MODES, EngineConfig, Request, make_planner
from engine.drafter import Drafter, HiddenRelay, pad_batch
from engine.model import KVCache, TinyLM
from engine.noise import SALT_ACCEPT, SALT_DRAFT, SALT_SAMPLE, keyed_exponentials, keyed_uniforms
from engine.sampling import SamplingParams, probs_from_logits, sample
from engine.step import CLOCKS, EngineStats, StepOutput, full_rows
from engine.verify import match_verify, rejection_sample

__all__ = [
    "CLOCKS",
    "MODES",
    "make_planner",
    "Engine",
    "EngineConfig",
    "EngineStats",
    "Request",
    "StepOutput",
    "full_rows",
]


@dataclass(eq=False)
class _Running:
    req: Request
    slot: int
    output: list[int] = field(default_factory=list)

    @property
    def rid(self) -> int:
        return self.req.rid

    @property
    def params(self) -> SamplingParams:
        return self.req.params

    @property
    def tokens(self) -> list[int]:
        return list(self.req.prompt) + self.output

    @property
    def remaining(self) -> int:
        return self.req.max_new_tokens - len(self.output)


class Engine:
    """Batched speculative (or plain) decoding of a TinyLM target with a drafter and a specsched policy."""

    def __init__(
        self,
        target: TinyLM,
        drafter: Drafter | None,
        config: EngineConfig,
        *,
        max_len: int = 512,
        observers: Sequence[Callable[[StepOutput], None]] = (),
    ):
        self.target, self.drafter, self.config = target, drafter, config
        self.observers = list(observers)  # each gets every step's StepOutput
        self._now = CLOCKS[config.clock]
        self.policy = specsched.make_policy(config.policy, **dict(config.policy_params))
        if not self.policy.lossless and config.mode == "standard":
            warnings.warn(
                f"policy {self.policy!r} is not lossless: standard-mode output will not follow the target "
                "distribution (coupled mode still reproduces plain decoding)",
                specsched.LosslessnessWarning,
                stacklevel=2,
            )
        cost = config.cost
        self.cost = cost if isinstance(cost, specsched.CostTable) else specsched.load_cost(cost)
        self.device = torch.device(config.device)
        on = target.w["tok"].device
        index_differs = None not in (on.index, self.device.index) and on.index != self.device.index
        if on.type != self.device.type or (self.device.type == "cuda" and index_differs):
            raise ValueError(
                f"Engine: the target's weights are on {target.w['tok'].device}, EngineConfig field 'device' "
                f"is {config.device!r} (move the models first, e.g. Bundle.target(device))"
            )
        self.max_len = max_len
        self.cache = KVCache(target.config, config.max_running, max_len, device=self.device)
        self._cached = [0] * config.max_running  # host mirror of cache.lengths (feeds need no device read)
        self.stats = EngineStats()
        self._age = np.zeros(config.max_running, dtype=np.int64)  # speculative steps since admission, by slot
        self.planner, self._plan_cost = make_planner(self.policy, config, self.cost)
        self._relay = HiddenRelay() if getattr(drafter, "uses_hidden", False) else None

    def generate(self, requests: Sequence[Request], *, speculative: bool = True) -> dict[int, list[int]]:
        """Decode every request to max_new_tokens; returns rid -> generated token ids."""
        if speculative and self.drafter is None:
            raise ValueError("generate: speculative decoding needs a drafter")
        rids = [r.rid for r in requests]
        if len(set(rids)) != len(rids):
            raise ValueError("generate: request ids must be unique")
        for r in requests:
            if len(r.prompt) + r.max_new_tokens + self.config.gamma + 1 > self.max_len:
                raise ValueError(
                    f"Request {r.rid}: prompt + max_new_tokens + gamma exceeds max_len {self.max_len}"
                )
        self.stats = EngineStats()
        started = time.perf_counter()
        self._t0 = self._now()
        if self._relay is not None:
            self._relay = HiddenRelay()  # nothing carries over from an earlier generate (rids may repeat)
        waiting, running, done = deque(requests), [], {}
        free = list(range(self.config.max_running - 1, -1, -1))
        while waiting or running:
            while waiting and free:
                run = _Running(waiting.popleft(), free.pop())
                self.cache.lengths[run.slot] = 0
                self._cached[run.slot] = 0
                self._age[run.slot] = 0
                running.append(run)
            out = self._spec_step(running) if speculative else self._plain_step(running)
            for observer in self.observers:
                observer(out)
            finished = [x for x in running if x.remaining <= 0]
            running = [x for x in running if x.remaining > 0]
            for run in finished:
                free.append(run.slot)
                done[run.rid] = run.output
                if self.drafter is not None:
                    self.drafter.release(run.rid)
        self.stats.seconds = time.perf_counter() - started
        return {rid: done[rid] for rid in rids}

    def _tensor(self, values) -> torch.Tensor:
        """int64 tensor of host values on the engine's device (one host-to-device copy)."""
        return torch.tensor(values, dtype=torch.int64).to(self.device)

    def _keys(self, running) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        keys = [(x.req.seed, x.rid, len(x.req.prompt) + len(x.output)) for x in running]
        seeds, rids, pos = self._tensor(keys).reshape(len(running), 3).unbind(1)
        return seeds, rids, pos

    def _forward(self, running, feeds) -> tuple[torch.Tensor, torch.Tensor]:
        tokens, n_valid = pad_batch(feeds, self.device)
        slots = self._tensor([x.slot for x in running])
        out = self.target.run(tokens, n_valid, slots, self.cache, hidden=self._relay is not None)
        if self._relay is not None:
            self._relay.computed = out.hidden.to(self.cache.k.dtype)
        return out.logits, n_valid

    def _feeds(self, running) -> tuple[list[list[int]], list[int]]:
        """Each request's committed tokens not yet in the target cache, and its committed length."""
        tokens = [x.tokens for x in running]
        return [t[self._cached[x.slot] :] for t, x in zip(tokens, running)], [len(t) for t in tokens]

    def _commit_lengths(self, running, lengths: list[int]) -> None:
        for x, n in zip(running, lengths):
            self._cached[x.slot] = n
        self.cache.lengths[self._tensor([x.slot for x in running])] = self._tensor(lengths)

    def _output(
        self,
        running,
        before,
        start: float,
        draft_s: float,
        conf,
        raw,
        decision,
        ells,
        accepted,
        drafted=(0, 0),
    ):
        """The StepOutput of the step just done (`before`: each request's output length before it;
        `drafted`: (requests drafted, positions drafted); `decision`: the planner's `StepDecision`, or the
        planned lengths of a plain step)."""
        i64 = np.int64
        planned = decision.lengths if isinstance(decision, specsched.StepDecision) else decision
        return StepOutput(
            rids=np.array([x.rid for x in running], dtype=i64),
            first=np.array([b == 0 for b in before], dtype=bool),
            finished=np.array([x.remaining <= 0 for x in running], dtype=bool),
            conf=conf,
            raw_conf=raw,
            planned=np.asarray(planned, dtype=i64).reshape(len(running)),
            lengths=np.array(ells, dtype=i64).reshape(len(running)),
            accepted=np.array(accepted, dtype=i64).reshape(len(running)),
            emitted=np.array([len(x.output) - b for x, b in zip(running, before)], dtype=i64),
            start_s=start,
            draft_s=draft_s,
            end_s=self._now() - self._t0,
            drafting=drafted[0],
            drafted=drafted[1],
            decision=decision if isinstance(decision, specsched.StepDecision) else None,
        )

    def _plain_step(self, running) -> StepOutput:
        start, before = self._now() - self._t0, [len(x.output) for x in running]
        vocab = self.target.config.vocab_size
        feeds, committed = self._feeds(running)
        logits, n_valid = self._forward(running, feeds)
        last = logits[torch.arange(len(running), device=self.device), n_valid - 1]
        probs = probs_from_logits(last, [x.params for x in running])
        seeds, rids, pos = self._keys(running)
        noise = keyed_exponentials(seeds, rids, pos, SALT_SAMPLE, vocab, device=self.device)
        tok = sample(probs, noise).tolist()
        self._commit_lengths(running, committed)  # everything fed is now cached
        for x, t in zip(running, tok):
            x.output.append(t)
        self.stats.steps += 1
        self.stats.verify_tokens += len(running)
        self.stats.emitted += len(running)
        none, zeros = np.zeros((len(running), 0)), [0] * len(running)
        return self._output(running, before, start, 0.0, none, none, zeros, zeros, zeros)

    def _spec_step(self, running) -> StepOutput:
        """One speculative step: draft → plan → verify → commit (the plan is the shared `Planner`'s)."""
        start, before = self._now() - self._t0, [len(x.output) for x in running]
        keys = self._keys(running)
        slots = np.array([x.slot for x in running], dtype=np.int64)
        age, plan = self._age[slots], self.planner
        depths = plan.before_draft(slots, age, cost=self._plan_cost)  # from lagged rows, before drafting
        prop, conf, e_pos, draft_s = self._propose(running, depths, keys)
        decision = plan.after_draft(conf, slots, age, cost=self._plan_cost)
        self._age[slots] += 1
        cap = np.array([x.remaining - 1 for x in running], dtype=np.int64)  # value-blind: counts only
        ells = np.clip(decision.lengths, 0, np.maximum(cap, 0)).astype(np.int64).tolist()  # host: feeds
        emitted = self._verify_commit(running, prop, ells, keys, e_pos)
        r, depths = len(running), decision.depths
        # what the drafter was asked for: the draft pass's size, priced the same way in profile and twin
        drafted = (
            (r, r * self.config.gamma)
            if depths is None
            else (int(np.count_nonzero(depths)), int(depths.sum()))
        )
        self.stats.count(r, ells, emitted, drafted[1])
        raw = conf if prop.raw_conf is None else prop.raw_conf.to(torch.float64).cpu().numpy()
        accepted = [n - 1 for n in emitted]
        return self._output(running, before, start, draft_s, conf, raw, decision, ells, accepted, drafted)

    def _propose(self, running, depths, keys):
        """(proposal, conf float64[R, γ] on the host, e_pos, draft seconds) of the step's draft pass."""
        seeds, rids, t0 = keys
        offs = torch.arange(self.config.gamma + 1, dtype=torch.int64, device=self.device)
        e_pos, e_draft = self._draft_noise(seeds, rids, t0, offs)
        deepest = self.config.gamma if depths is None else int(depths.max(initial=0))
        t_draft = self._now()
        prop = self._draft(running, depths, deepest, e_draft)
        conf = prop.conf.to(torch.float64).cpu().numpy()  # the one device-to-host copy the scheduler needs
        draft_s = self._now() - t_draft  # the copy waited for the drafter's kernels: they count as drafting
        return prop, conf, e_pos, draft_s

    def _verify_commit(self, running, prop, ells: list[int], keys, e_pos) -> list[int]:
        """One batched target forward over each request's uncached tokens plus its first ℓ_r drafts, the
        verifier, then the commit (cache lengths, relayed hidden states, outputs); returns tokens emitted."""
        r, gamma, vocab = len(running), self.config.gamma, self.target.config.vocab_size
        offs = torch.arange(gamma + 1, dtype=torch.int64, device=self.device)
        feeds, committed = self._feeds(running)
        n_unc = self._tensor([len(f) for f in feeds])
        feeds = [f + d[:ell] for f, d, ell in zip(feeds, prop.tokens.tolist(), ells)]
        logits, n_valid = self._forward(running, feeds)
        rows = torch.minimum(n_unc[:, None] - 1 + offs[None, :], n_valid[:, None] - 1)  # [R, γ+1]
        target_logits = logits.gather(1, rows[:, :, None].expand(r, gamma + 1, vocab))
        target_probs = probs_from_logits(target_logits, [x.params for x in running])
        tokens, n_emit = self._verify(prop, target_probs, self._tensor(ells), keys, e_pos)
        emitted = n_emit.tolist()
        observe = getattr(self.drafter, "observe", None)  # the Drafter protocol's optional hook
        if observe is not None:
            observe([x.rid for x in running], ells, [n - 1 for n in emitted])
        kept = [c + n - 1 for c, n in zip(committed, emitted)]  # committed + accepted drafts
        if self._relay is not None:  # before committing: the cached lengths are where the forward began
            first = [self._cached[x.slot] for x in running]
            self._relay.keep([x.rid for x in running], first, [len(f) for f in feeds], kept)
        self._commit_lengths(running, kept)
        for x, row, n in zip(running, tokens.tolist(), emitted):
            x.output.extend(row[: min(n, x.remaining)])
        return emitted

    def _draft(self, running, depths, deepest: int, e_draft: torch.Tensor):
        """The step's Proposal [R, γ]. With planned depths (int64[R]) only what the plan asks is drafted:
        depth-0 requests skip the drafter, the pass stops at the deepest planned depth (the autoregressive
        drafter runs that many passes) and each request's positions past its own depth are masked (zeros,
        never verified; the parallel block keeps its trained size, so what it computes for k < d_r is what
        full drafting computes)."""
        gamma = self.config.gamma
        if depths is None or depths.min() >= gamma:  # full drafting (a plan of full depths drafts the same)
            return self.drafter.propose(running, gamma, e_draft, **self._hidden(running))
        drafting = np.flatnonzero(depths)
        rows = torch.as_tensor(drafting, device=e_draft.device)
        reqs = running if drafting.size == len(running) else [running[i] for i in drafting]
        prop = self.drafter.propose(reqs, deepest, e_draft[rows, :deepest], **self._hidden(reqs))
        return prop.placed(rows, torch.as_tensor(depths, device=e_draft.device), len(running), gamma)

    def _hidden(self, reqs) -> dict:
        """propose's `hidden` keyword: what the target committed for `reqs` since they last drafted."""
        if self._relay is None:
            return {}
        return {"hidden": self._relay.hand([x.rid for x in reqs], self.cache.k)}

    def _draft_noise(self, seeds, rids, t0, offs):
        """(e_pos, e_draft): coupled mode drafts with the target's own noise at absolute positions
        t0 .. t0+γ-1 (e_pos [R, γ+1, V], kept for sampler-match); standard mode with fresh per-step noise."""
        gamma, vocab, dev = self.config.gamma, self.target.config.vocab_size, self.device
        if self.config.mode == "coupled":
            e_pos = keyed_exponentials(
                seeds[:, None], rids[:, None], t0[:, None] + offs, SALT_SAMPLE, vocab, device=dev
            )
            return e_pos, e_pos[:, :gamma]
        salts = SALT_DRAFT + offs[:gamma]
        return None, keyed_exponentials(seeds[:, None], rids[:, None], t0[:, None], salts, vocab, device=dev)

    def _verify(self, prop, target_probs, lengths, keys, e_pos):
        """(tokens, n_emit): sampler-match in coupled mode, else rejection sampling with keyed noise."""
        if self.config.mode == "coupled":
            return match_verify(prop.tokens, target_probs, lengths, e_pos)
        seeds, rids, t0 = keys
        gamma, vocab, dev = self.config.gamma, self.target.config.vocab_size, self.device
        u = keyed_uniforms(seeds, rids, t0, SALT_ACCEPT, gamma, device=dev)
        e_res = keyed_exponentials(seeds, rids, t0, SALT_SAMPLE, vocab, device=dev)
        return rejection_sample(
            prop.tokens,
            prop.probs,
            target_probs,
            lengths,
            uniforms=u,
            exponentials=e_res,
            backend=self.config.backend,
        )
