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
   accepted = model.sample_accepted(true, lengths) (truth noise, estimate noise and accept uniforms: three
   separate streams). For policies with `uses_stale` the server keeps each
   request's confidences of its last `delay` decode steps and passes those from `delay` steps earlier;
   a request younger than that passes its domain's population curve (a constant, so still lossless).
3. Prefill: the token budget left after verify tokens (verify first, as vLLM) goes to running requests
   still prefilling, in admission order, then to waiting requests admitted FIFO while `max_num_seqs`,
   the budget and free KV allow (no admission in a step that preempted). Chunks are limited by free KV.
4. Time: step = draft_s(R) + cost.request_seconds · (running requests) + cost.latency(prefill tokens
   + Σ (1 + ℓ_r)) + server.prefill_request_seconds · (requests prefilling in this step) (see `sim.drafter`
   and `specsched.CostTable`).
5. At t + step: each decoding request emits min(accepted + 1, tokens still owed); a request whose
   prefill completes emits its first token (TTFT); requests that reached their output length leave.

Runs of pure-decode steps with a fixed batch are decided several steps per vectorized pass
(`sim.steps.plan_decode_run`), with exactly the draws, decisions and times of single steps; each step still
takes its own simpy timeout and its own `Recorder.step`. `Engine.max_run = 1` turns that off.

Time and tie-breaks: time is float seconds. Events at the same instant run in simpy's scheduling order
(FIFO by event id), so a run is a deterministic function of config and seed. Completion callbacks (closed
loop) run synchronously inside `_apply`, so a user with zero think time re-enters the queue before the
replica plans its next step at the same instant. Routers and arrival processes live in `sim.routing`.

State is numpy arrays indexed by slot (0..n−1 = running requests in admission order), not per-request
objects; per-request results go to `sim.recorder.Recorder`.

May import: numpy, simpy, the standard library, `sim.recorder`, `sim.steps`, `specsched` (CostTable, Policy).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from sim.recorder import Recorder
from sim.steps import DecodeRun, StepPlan, plan_decode_run, run_length
from specsched import CostTable, Policy


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
    rng_accept, rng_conf, rng_verify: truth noise, estimate noise, accept/reject uniforms; replica i draws
    from the i-th child of each (`Generator.spawn`), so its draws never depend on the other replicas.
    horizon: () -> simulated time of the next outside event that could reach a replica (the next arrival in
    open loop; default simpy's next event); max_run: most pure-decode steps decided in one pass (1 = off).
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
    rng_verify: np.random.Generator
    on_complete: Callable[[np.ndarray, float], None] | None = None
    on_step: Callable[[float], None] | None = None
    policy_cost: CostTable | None = None
    policy_draft_s: np.ndarray | None = None
    prefill_request_s: float = 0.0
    horizon: Callable[[], float] | None = None
    max_run: int = 256

    def __post_init__(self) -> None:
        self.views: list[CostTable | None] = [None] * (self.max_num_seqs + 1)
        self._shortest: dict[int, float] = {}
        if self.horizon is None:
            self.horizon = self.env.peek
        # The multi-step path needs K steps' draws at once and no per-request history.
        self.multi_step = (
            self.max_run > 1 and hasattr(self.model, "draw_steps") and not self.policy.uses_stale
        )

    def step_seconds(self, r: int, n: int, tokens):
        """Seconds of a step with r decoding of n running requests and `tokens` batched tokens (int or
        int64[K]): draft + KV reads of every running request + verify/prefill forward (module doc, 4.)."""
        return self.draft_s[r] + self.cost.request_seconds * n + self.latency[tokens]

    def shortest_step(self, n: int) -> float:
        """A lower bound on a pure-decode step of n requests (seconds): the cheapest B in n..n·(γ + 1)."""
        got = self._shortest.get(n)
        if got is None:
            lat = self.latency[n : n * (self.gamma + 1) + 1]
            got = self._shortest[n] = float(self.draft_s[n] + self.cost.request_seconds * n + lat.min())
        return got

    def view(self, r: int) -> CostTable:
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
        self.delay = eng.policy.delay if eng.policy.uses_stale else -1
        self.hist = np.zeros((s, self.delay + 1, eng.gamma)) if self.delay >= 0 else None
        self.wake: simpy.Event | None = None
        # Own streams (children spawned in replica order): a replica's draws never interleave with another's,
        # so deciding several steps at once, or simulating one replica alone, draws the same numbers.
        self.rng_truth, self.rng_conf, self.rng_verify = (
            g.spawn(1)[0] for g in (eng.rng_accept, eng.rng_conf, eng.rng_verify)
        )
        self.tau_seen = 2.0  # tokens per request-step in pure-decode runs so far (sizes the next run)
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
        eng = self.eng
        env, rec = eng.env, eng.recorder
        while True:
            if self.n == 0 and not self.queue:
                self.wake = env.event()
                yield self.wake
                self.wake = None
            plan = self._plan()
            if type(plan) is StepPlan:
                yield env.timeout(plan.seconds)
                self._apply(plan)
                continue
            draft = float(eng.draft_s[plan.r])
            for seconds, verify, emitted in zip(plan.seconds, plan.verify, plan.emitted):
                start = env.now
                yield env.timeout(seconds)
                rec.step(start, seconds, draft, plan.r, verify, emitted)
                if eng.on_step is not None:
                    eng.on_step(env.now)
            self._apply_run(plan)

    def _plan(self) -> StepPlan | DecodeRun:
        """Decide this step (steps 1–4 of the module doc), or a run of pure-decode steps (`sim.steps`)."""
        eng = self.eng
        gamma, now = eng.gamma, eng.env.now
        while True:
            preempted = self._make_room()
            n, r = self.n, self.n_decoding
            if r == n:
                if r and gamma and not preempted and eng.multi_step:
                    k = min(run_length(self, now), eng.max_run)
                    if k > 1:
                        return plan_decode_run(self, k, now)
                di: slice | np.ndarray = slice(0, n)
                pf = None
            else:
                decoding = self.pleft[:n] == 0
                di = np.flatnonzero(decoding)
                pf = np.flatnonzero(~decoding)
            if r and gamma:
                lengths, accepted = self._decide(di, r)
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
        # Attention reads every running request's KV once per step, prefilling ones included.
        seconds = float(eng.step_seconds(r, self.n, verify + prefill))
        if eng.prefill_request_s and prefill:
            seconds += eng.prefill_request_s * int(np.count_nonzero(chunks))
        return StepPlan(di, r, lengths, accepted, pf, chunks, prefill, now, seconds, verify)

    def _decide(self, di, r: int) -> tuple[np.ndarray, np.ndarray]:
        """(lengths, accepted) int64[r] of this step's r decoding slots `di`: draws, policy, verification."""
        eng, model = self.eng, self.eng.model
        dom, lat = self.dom[di], self.lat[di]
        if eng.multi_step:  # the run path's draws for one step: results never depend on the run lengths
            w, conf = model.draw_steps(dom, lat, 1, self.rng_truth, self.rng_conf)
            lengths = eng.policy.trusted(conf[0], eng.view(r), None, eng.max_batch_tokens)
            return lengths, model.accept_steps(w, lengths[None], self.rng_verify)[0]
        true, conf = model.step(dom, lat, self.rng_truth, self.rng_conf)
        stale = self._stale(di, conf) if self.hist is not None else None
        lengths = eng.policy.trusted(conf, eng.view(r), stale, eng.max_batch_tokens)
        return lengths, model.sample_accepted(true, lengths, self.rng_verify)

    def _stale(self, di, conf: np.ndarray) -> np.ndarray:
        """Record `conf` for the decoding slots `di`; return their confidences from `delay` steps earlier.

        A request younger than `delay` decode steps has no such row: it passes its domain's population
        curve (`model.curves`, a constant known before any token is drafted), never its current row —
        sizing the batch from current confidences is exactly the lookahead bias the delay exists to avoid.
        """
        d = self.delay
        if isinstance(di, slice):
            di = np.arange(di.start, di.stop)
        age = self.dsteps[di]  # decode steps since admission
        self.hist[di, age % (d + 1)] = conf
        stale = self.hist[di, (age - d) % (d + 1)]
        young = age < d
        if young.any():
            stale[young] = self.eng.model.curves[self.dom[di[young]]]
        return stale

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

    def _apply(self, plan: StepPlan) -> None:
        """Step 5: emit tokens, finish prefills and requests, at the end of the planned step."""
        eng, rec = self.eng, self.eng.recorder
        di, r, lengths, accepted = plan.decoding, plan.r, plan.lengths, plan.accepted
        pf, chunks, prefill = plan.prefill_slots, plan.chunks, plan.prefill_tokens
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
                rids = self.rid[ready]
                first = rids[np.isnan(rec.first_token_s[rids])]
                rec.first_token_s[first] = now
        self.kv_used += emitted + prefill
        rec.step(plan.start, plan.seconds, float(eng.draft_s[r]), r, plan.verify, emitted)
        self._finish(now)
        if eng.on_step is not None:
            eng.on_step(now)

    def _apply_run(self, run: DecodeRun) -> None:
        """The end of a `DecodeRun`: per-slot totals of its K steps (each step already recorded)."""
        n = run.r
        self.gen[:n] += run.emit
        self.acc[:n] += run.accepted
        self.dsteps[:n] += len(run.seconds)
        self.lsum[:n] += run.lengths
        emitted = sum(run.emitted)
        self.kv_used += emitted
        self.tau_seen = 0.9 * self.tau_seen + 0.1 * emitted / (n * len(run.seconds))
        if run.finished:
            self._finish(self.eng.env.now)

    def _finish(self, now: float) -> None:
        """Requests that reached their output length leave (completion callbacks run here)."""
        eng, rec = self.eng, self.eng.recorder
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
                self.hist[:m] = self.hist[:n][keep]
            self.n = m
            rec.finished(rids, now)
            if eng.on_complete is not None:
                eng.on_complete(rids, now)

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
