"""The serving model: replicas behind a router, each a simpy process running engine steps.

Role: batching and admission only. Every verify length is decided by the ONE `specsched` policy; every
acceptance outcome is drawn from the TRUE probabilities of `sim.acceptance`; the scheduler only ever sees
the estimated confidences.

One engine step of a replica, at time t (`Replica._plan`, then `yield timeout`, then `Replica._apply`):

1. KV: every decoding request reserves its KV plus γ + 1 slots (the drafts and the bonus token, before
   acceptance is known); prefilling requests hold what they have computed. While that exceeds
   `kv_tokens`, the NEWEST running request is preempted: its KV is dropped, it goes back to the head of
   the queue, and on readmission it recomputes its prompt plus the tokens it already emitted (counted).
2. Decode: for the R running requests that finished prefill, (true, conf) = model.step(...) (the truth and
   the estimate of it), lengths = policy(conf, cost.with_draft(draft_s), stale=..., max_batch_tokens),
   accepted = model.sample_accepted(true, lengths). For policies with `uses_stale` the server keeps each
   request's confidences of its last `delay` decode steps in one `specsched.StaleBuffer` and passes those
   from `delay` steps earlier; a request younger than that passes its domain's population curve (the
   buffer's stated prior: a constant, so still lossless). With draft = "adaptive" the policy first plans
   each request's draft depth from those lagged rows (`policy.depths`), the step's draft pass is priced
   from the depths (`sim.drafter.draft_cost`), and verify lengths are chosen within them. The acceptance
   model still draws all γ positions, so both draft modes consume the random streams alike.
3. Prefill: the token budget left after verify tokens (verify first, as vLLM) goes to running requests
   still prefilling, in admission order, then to waiting requests admitted FIFO while `max_num_seqs`,
   the budget and free KV allow (no admission in a step that preempted). Chunks are limited by free KV.
4. Time: step = draft seconds (draft_s(R), or priced from the planned depths) + cost.request_seconds ·
   (running requests) + cost.kv_token_seconds · (KV tokens they hold: prompt + generated, or the computed
   part of a prompt) + cost.latency(prefill tokens + Σ (1 + ℓ_r)) + server.prefill_request_seconds ·
   (requests prefilling in this step) (see `sim.drafter` and `specsched.CostTable`).
5. At t + step: each decoding request emits min(accepted + 1, tokens still owed); a request whose
   prefill completes emits its first token (TTFT); requests that reached their output length leave.

Time and tie-breaks: time is float seconds. Events at the same instant run in simpy's scheduling order
(FIFO by event id), so a run is a deterministic function of config and seed. Completion callbacks (closed
loop) run synchronously inside `_apply`, so a user with zero think time re-enters the queue before the
replica plans its next step at the same instant. The router is consulted once per arrival; ties between
replicas go to the lowest index.

State is numpy arrays indexed by slot (0..n−1 = running requests in admission order), not per-request
objects; per-request results go to `sim.recorder.Recorder`.

May import: numpy, simpy, the standard library, `sim.recorder`, `specsched` (CostTable, Policy, DraftCost,
StaleBuffer).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from sim.recorder import Recorder
from specsched import CostTable, DraftCost, Policy, StaleBuffer


@dataclass
class Engine:
    """What every replica shares: the model of one deployment (read-only during a run).

    input_tokens, output_tokens, domain, latent: per-request arrays (int64/int64/int64/float64[N]).
    draft_s: float64[max_num_seqs + 1], draft seconds by decoding-request count R.
    latency: float64[max_num_batched_tokens + 1], verify seconds by step tokens B.
    views: cost table with draft_s[R] as its draft cost, by R (what the policy is given).
    policy_cost, policy_draft_s: the table and draft seconds the policy plans with when they differ from
    the ones that time the steps (server.policy_cost); None = cost and draft_s.
    prefill_request_s: seconds added per request prefilling in a step (server.prefill_request_seconds).
    drafter: how the draft pass is priced from planned depths (used with draft = "adaptive").
    observer: optional per-step callback (e.g. `sim.timeline.TimelineWriter`), see the field.
    draft_kv_s: the measured draft cost's seconds per KV token held (drafter.cost with a context column).
    """

    env: simpy.Environment
    recorder: Recorder
    model: object  # sim.acceptance.AcceptanceModel or sim.empirical.EmpiricalModel
    policy: Policy
    cost: CostTable
    gamma: int
    max_num_seqs: int
    max_batch_tokens: int
    kv_tokens: int
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    domain: np.ndarray
    latent: np.ndarray
    draft_s: np.ndarray
    latency: np.ndarray
    rng_accept: np.random.Generator
    rng_conf: np.random.Generator
    on_complete: Callable[[np.ndarray, float], None] | None = None
    on_step: Callable[[float], None] | None = None
    policy_cost: CostTable | None = None
    policy_draft_s: np.ndarray | None = None
    prefill_request_s: float = 0.0
    drafter: DraftCost | None = None
    #: called at the end of every step as observer(replica, start, seconds, decoding requests, verify
    #: tokens, prefill tokens, lengths, accepted, emitted tokens); None (the default) costs nothing
    observer: Callable[..., None] | None = None
    draft_kv_s: float = 0.0

    def __post_init__(self) -> None:
        self.views: list[CostTable | None] = [None] * (self.max_num_seqs + 1)
        self.adaptive = getattr(self.policy, "draft", "full") == "adaptive"
        if self.adaptive and self.drafter is None:
            raise ValueError("Engine: an adaptive policy needs `drafter` (how to price the draft pass)")

    def view(self, r: int, kv: int = 0) -> CostTable:
        """The table the policy plans with at R = r decoding requests holding `kv` KV tokens in all: the
        draft seconds and the context's KV reads both go into its fixed (ℓ-independent) term."""
        v = self._view(r)
        extra = (v.kv_token_seconds + self.draft_kv_s) * kv
        return v.with_draft(v.draft_seconds + extra) if extra else v

    def _view(self, r: int) -> CostTable:
        v = self.views[r]
        if v is None:
            if self.policy_cost is None:
                v = self.cost.with_draft(float(self.draft_s[r]))
            else:
                v = self.policy_cost.with_draft(float(self.policy_draft_s[r]))
            self.views[r] = v
        return v


class Replica:
    """One engine: a FIFO queue of request ids and a running batch held in slot arrays.

    Slot state is one int64[9, max_num_seqs] array (rows: request id, prefill tokens left, tokens emitted,
    output length, domain, prompt length, and since admission: accepted drafts, decode steps, Σ ℓ) plus
    the latent float64[max_num_seqs], so leaving requests are compacted with one fancy index. A slot's
    KV is prompt + emitted − prefill left (prefill: what was computed; decode: prompt + output so far);
    `kv_used` and `n_decoding` keep the replica totals.
    """

    def __init__(self, index: int, eng: Engine) -> None:
        self.index = index
        self.eng = eng
        s = eng.max_num_seqs
        self.queue: deque[int] = deque()
        self.n = 0
        self.n_decoding = 0
        self.kv_used = 0
        self.state = np.zeros((9, s), dtype=np.int64)
        (self.rid, self.pleft, self.gen, self.olen, self.dom, self.inp, self.acc, self.dsteps, self.lsum) = (
            self.state
        )
        self.lat = np.zeros(s)
        self.hist = StaleBuffer(s, eng.gamma, eng.policy.delay) if eng.policy.uses_stale else None
        self.wake: simpy.Event | None = None
        self.plan: tuple | None = None
        self.process = eng.env.process(self.run())

    @property
    def outstanding(self) -> int:
        return len(self.queue) + self.n

    def enqueue(self, rid: int) -> None:
        eng = self.eng
        eng.recorder.arrived(rid, eng.env.now, self.index)
        self.queue.append(rid)
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    # -- the step loop -------------------------------------------------------------------------------------

    def run(self):
        env = self.eng.env
        while True:
            if self.n == 0 and not self.queue:
                self.wake = env.event()
                yield self.wake
                self.wake = None
            yield env.timeout(self._plan())
            self._apply()

    def _plan(self) -> float:
        """Decide this step (steps 1–4 of the module doc); returns its duration in seconds."""
        eng = self.eng
        gamma, now = eng.gamma, eng.env.now
        while True:
            preempted = self._make_room()
            n, r = self.n, self.n_decoding
            if r == n:
                di: slice | np.ndarray = slice(0, n)
                pf = None
            else:
                decoding = self.pleft[:n] == 0
                di = np.flatnonzero(decoding)
                pf = np.flatnonzero(~decoding)
            draft_s = float(eng.draft_s[r])
            if r and gamma:
                true, conf = eng.model.step(self.dom[di], self.lat[di], eng.rng_accept, eng.rng_conf)
                if eng.adaptive:
                    lengths, draft_s = self._adaptive(di, conf)
                else:
                    stale = self._stale(di, conf) if self.hist is not None else None
                    lengths = eng.policy(
                        conf, eng.view(r, self.kv_used), stale=stale, max_batch_tokens=eng.max_batch_tokens
                    )
                accepted = eng.model.sample_accepted(true, lengths, eng.rng_accept)
                verify = r + int(lengths.sum())
            else:
                lengths = accepted = np.zeros(r, dtype=np.int64)
                verify = r
            room = min(eng.max_batch_tokens - verify, eng.kv_tokens - self.kv_used - (gamma + 1) * r)
            chunks = None
            if pf is not None:
                want = self.pleft[pf]
                before = np.cumsum(want) - want
                chunks = np.clip(room - before, 0, want)
                room -= int(chunks.sum())
            if not preempted and self.queue and room > 0 and self.n < eng.max_num_seqs:
                pf, chunks, room = self._admit(pf, chunks, room, now)
            prefill = 0 if chunks is None else int(chunks.sum())
            if verify + prefill > 0:
                break
            # Only prefilling requests whose next chunk does not fit in KV: free some and plan again.
            self._preempt_newest(now)
        # Attention reads every running request's KV once per step, prefilling ones included: a fixed
        # charge per request plus, for a context-aware table, one per KV token held (kv_used = Σ context).
        seconds = float(
            draft_s
            + eng.cost.request_seconds * self.n
            + (eng.cost.kv_token_seconds + eng.draft_kv_s) * self.kv_used
            + eng.latency[verify + prefill]
        )
        if eng.prefill_request_s and prefill:
            seconds += eng.prefill_request_s * int(np.count_nonzero(chunks))
        self.plan = (di, r, lengths, accepted, pf, chunks, prefill, now, seconds, verify, draft_s)
        return seconds

    def _stale(self, di, conf: np.ndarray) -> np.ndarray:
        """Record `conf` for the decoding slots `di`; return their confidences from `delay` steps earlier.

        A request younger than `delay` decode steps has no such row: it passes its domain's population
        curve (`model.curves`, a constant known before any token is drafted), never its current row —
        sizing the batch from current confidences is exactly the lookahead bias the delay exists to avoid.
        """
        if isinstance(di, slice):
            di = np.arange(di.start, di.stop)
        age = self.dsteps[di]  # decode steps since admission
        return self.hist.exchange(di, age, conf, self.eng.model.curves[self.dom[di]])

    def _adaptive(self, di, conf: np.ndarray) -> tuple[np.ndarray, float]:
        """Plan depths from the lagged rows (delay 0, the negative control: the current ones), price the
        draft pass from them, verify within them; record only drafted positions (the rest hold the prior).
        The policy uses its own table (server.policy_cost, when set); the step is timed with the hardware's.
        """
        eng = self.eng
        if isinstance(di, slice):
            di = np.arange(di.start, di.stop)
        age = self.dsteps[di]
        prior = eng.model.curves[self.dom[di]]
        if eng.policy.delay == 0:
            stale = self.hist.exchange(di, age, conf, prior)
        else:
            stale = self.hist.lagged(di, age, prior)
        plan_cost = eng.cost if eng.policy_cost is None else eng.policy_cost
        # The context's KV reads are a fixed (depth- and ℓ-independent) term, carried as draft_seconds.
        context = plan_cost.kv_token_seconds * self.kv_used
        fixed = plan_cost.with_draft(context) if context else plan_cost
        depths = eng.policy.depths(stale, fixed, eng.drafter, max_batch_tokens=eng.max_batch_tokens)
        draft_s = eng.drafter.seconds(depths, eng.cost)
        plan_s = draft_s if eng.policy_cost is None else eng.drafter.seconds(depths, plan_cost)
        view = plan_cost.with_draft(plan_s + context)
        lengths = eng.policy(conf, view, stale=stale, max_batch_tokens=eng.max_batch_tokens, depths=depths)
        if eng.policy.delay:
            self.hist.record(di, age, conf, depths=depths, prior=prior)
        return lengths, draft_s

    def _make_room(self) -> bool:
        """Preempt newest requests until held KV plus decode reservations fit; True if any was preempted."""
        eng = self.eng
        preempted = False
        while self.n > 0 and self.kv_used + (eng.gamma + 1) * self.n_decoding > eng.kv_tokens:
            self._preempt_newest(eng.env.now)
            preempted = True
        return preempted

    def _preempt_newest(self, now: float) -> None:
        if self.n == 0:
            raise RuntimeError("replica cannot make progress: a request does not fit in server.kv_tokens")
        s = self.n - 1
        rid = int(self.rid[s])
        self._leave(slice(s, s + 1))
        self.n = s
        self.eng.recorder.preempted(rid, now)
        self.queue.appendleft(rid)

    def _admit(self, pf, chunks, room: int, now: float):
        """Admit waiting requests FIFO into free slots; returns prefill slots/chunks and the room left."""
        eng, rec = self.eng, self.eng.recorder
        new_slots, new_chunks = [], []
        while self.queue and room > 0 and self.n < eng.max_num_seqs:
            rid = self.queue.popleft()
            rec.admitted(rid, now)
            s = self.n
            self.n += 1
            done = int(rec.generated[rid])
            prompt = int(eng.input_tokens[rid])
            # A preempted request recomputes its prompt and the tokens it already emitted.
            row = (rid, prompt + done, done, eng.output_tokens[rid], eng.domain[rid], prompt, 0, 0, 0)
            self.state[:, s] = row
            self.lat[s] = eng.latent[rid]
            chunk = min(prompt + done, room)
            room -= chunk
            new_slots.append(s)
            new_chunks.append(chunk)
        slots = np.asarray(new_slots, dtype=np.int64)
        sizes = np.asarray(new_chunks, dtype=np.int64)
        if pf is not None:
            slots, sizes = np.concatenate([pf, slots]), np.concatenate([chunks, sizes])
        return slots, sizes, room

    def _apply(self) -> None:
        """Step 5: emit tokens, finish prefills and requests, at the end of the planned step."""
        eng, rec = self.eng, self.eng.recorder
        di, r, lengths, accepted, pf, chunks, prefill, start, seconds, verify, draft_s = self.plan
        now = eng.env.now
        emitted = 0
        if r:
            emit = np.minimum(accepted + 1, self.olen[di] - self.gen[di])
            self.gen[di] += emit
            self.acc[di] += accepted
            self.dsteps[di] += 1
            self.lsum[di] += lengths
            emitted = int(emit.sum())
        if pf is not None and pf.size:
            self.pleft[pf] -= chunks
            ready = pf[self.pleft[pf] == 0]
            if ready.size:  # prefill complete: the step also samples the next token
                self.gen[ready] += 1
                emitted += int(ready.size)
                self.n_decoding += int(ready.size)
                rec.prefilled(self.rid[ready], now)
        self.kv_used += emitted + prefill
        rec.step(start, seconds, draft_s, r, verify, emitted, lengths, accepted)
        if eng.observer is not None:  # off by default (the timeline): one None check per step
            eng.observer(self, start, seconds, r, verify, prefill, lengths, accepted, emitted)
        n = self.n
        done = self.gen[:n] >= self.olen[:n]
        if done.any():
            idx = np.flatnonzero(done)
            rids = self.rid[idx].copy()
            self._leave(idx)
            keep = ~done
            m = n - idx.size
            self.state[:, :m] = self.state[:, :n][:, keep]
            self.lat[:m] = self.lat[:n][keep]
            if self.hist is not None:
                self.hist.compact(keep, n)
            self.n = m
            rec.finished(rids, now)
            if eng.on_complete is not None:
                eng.on_complete(rids, now)
        if eng.on_step is not None:
            eng.on_step(now)

    def _leave(self, idx) -> None:
        """Slots `idx` leave the batch: release their KV, copy their counters into the recorder."""
        rec = self.eng.recorder
        rids, gen, pleft = self.rid[idx], self.gen[idx], self.pleft[idx]
        self.kv_used -= int((self.inp[idx] + gen - pleft).sum())
        self.n_decoding -= int(np.count_nonzero(pleft == 0))
        rec.generated[rids] = gen
        rec.decode_steps[rids] += self.dsteps[idx]
        rec.accepted[rids] += self.acc[idx]
        rec.verify_tokens[rids] += self.dsteps[idx] + self.lsum[idx]


class Router:
    """Sends each arriving request to a replica: "round_robin" or "least_outstanding" (ties: lowest index)."""

    def __init__(self, replicas: list[Replica], kind: str) -> None:
        self.replicas = replicas
        self.kind = kind
        self._next = 0

    def submit(self, rid: int) -> None:
        if self.kind == "round_robin":
            target = self.replicas[self._next]
            self._next = (self._next + 1) % len(self.replicas)
        else:
            target = min(self.replicas, key=lambda rep: (rep.outstanding, rep.index))
        target.enqueue(rid)


def open_loop(env: simpy.Environment, router: Router, arrival_s: np.ndarray):
    """simpy process: submit request i at arrival_s[i] (ids in arrival order)."""
    for rid, t in enumerate(arrival_s.tolist()):
        if t > env.now:
            yield env.timeout(t - env.now)
        router.submit(rid)


class ClosedLoop:
    """`users` users; each submits a request at t = 0, and after each completion thinks think_s[next id]
    seconds and submits the next unissued request id, until all N are issued."""

    def __init__(self, env: simpy.Environment, router: Router, users: int, think_s: np.ndarray) -> None:
        self.env, self.router, self.think_s = env, router, think_s
        self.issued = 0
        self.total = think_s.size
        for _ in range(min(users, self.total)):
            self._issue(0.0)

    def _issue(self, think: float) -> None:
        rid = self.issued
        self.issued += 1
        if think > 0.0:
            ev = self.env.timeout(think)
            ev.callbacks.append(lambda _ev: self.router.submit(rid))
        else:
            self.router.submit(rid)

    def on_complete(self, rids: np.ndarray, now: float) -> None:
        for _ in range(rids.size):
            if self.issued < self.total:
                self._issue(float(self.think_s[self.issued]))
