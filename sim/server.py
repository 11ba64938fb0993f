"""The serving model: replicas behind a router, each a simpy process running engine steps.

Role: batching and admission only. Every verify length is decided by the ONE `specsched` policy; every
acceptance outcome is drawn from the TRUE probabilities of `sim.acceptance`; the scheduler only ever sees
the estimated confidences.

One engine step of a replica, at time t (`Replica._plan`, then `yield timeout`, then `Replica._apply`):

1. KV: every decoding request reserves its KV plus γ + 1 slots (the drafts and the bonus token, before
   acceptance is known); prefilling requests hold what they have computed. While that exceeds
   `kv_tokens`, the NEWEST running request is preempted (vLLM v1's recompute): its KV is freed, it goes
   back to the head of the queue, and on readmission it recomputes its prompt plus the tokens it emitted
   (counted), less its blocks still cached (prefix caching: `PrefixCache.release`; docs/memory.md).
2. Decode: for the R running requests that finished prefill, (true, conf) = model.step(...) (the truth and
   the estimate of it), lengths = policy(conf, cost.with_draft(draft_s), stale=..., max_batch_tokens),
   accepted = model.sample_accepted(true, lengths) (truth noise, estimate noise and accept uniforms: three
   separate streams), all through the replica's `specsched.Planner` (the engine's too). For policies with
   `uses_stale` the planner keeps each request's confidences of its last `delay` decode steps and passes
   those from `delay` steps earlier; a request younger than that passes its domain's population curve (the
   buffer's stated prior: a constant, so still lossless). With draft = "adaptive" the policy first plans
   each request's draft depth from those lagged rows (`policy.depths`), the step's draft pass is priced
   from the depths (`sim.drafter.draft_cost`), and verify lengths are chosen within them. The acceptance
   model still draws all γ positions, so both draft modes consume the random streams alike.
3. Prefill: the token budget left after verify tokens (verify first, as vLLM) goes to running requests
   still prefilling, in admission order, then to waiting requests admitted FIFO while `max_num_seqs`,
   the budget and free KV allow (no admission in a step that preempted). Chunks are limited by free KV.
   One rule for every pool (vLLM v1's waiting queue): a request holds the longer of its external KV
   (`Deployment.external`, vLLM's `num_external_computed_tokens`; used once) and its prefix-cache hit,
   and is admitted if that plus its first chunk plus the γ + 1 slots a decoding request reserves (vLLM
   allocates the speculative lookahead at admission) fits in the KV left after reservations and planned
   chunks, and (async scheduling) it arrived before the step in flight was scheduled.
4. Time: the step's `StepShape` (running and decoding requests, batched and verify tokens, prefilling
   requests, padded verify slots, KV held, longest context) priced by the deployment's
   `specsched.StepCost` into a `StepBill`: draft + fixed + context + forward + prefill + pad + context_pad
   + attention (causal prefill pairs), each part one term of the config (`specsched.stepcost`).
5. At t + step: each decoding request emits min(accepted + 1, tokens still owed); a request whose
   prefill completes emits its first token (TTFT); requests that reached their output length leave.

Runs of pure-decode steps with a fixed batch are decided several steps per vectorized pass
(`sim.steps.plan_decode_run`), with exactly the draws, decisions and times of single steps; with one replica
and no observer a run takes one simpy timeout and one `Recorder.steps_run` (`Replica._decode_run`), else one
of each per step. `Deployment.max_run = 1` turns runs off.

Time and tie-breaks: time is float seconds; events at the same instant run in simpy's order (FIFO by
event id), so a run is a deterministic function of config and seed. Completion callbacks (closed
loop) run synchronously inside `_apply`, so a user with zero think time re-enters the queue before the
replica plans its next step at the same instant. Routers and arrival processes live in `sim.routing`.

State is numpy arrays by slot (0..n−1: running requests in admission order); results go to `sim.recorder`.

May import: numpy, simpy, the standard library, `sim.deployment`, `sim.steps`, `sim.drafting`,
`sim.tree_step` (drafter.topk > 1), `specsched` (Planner, StepDecision, StepShape).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import simpy

from sim.deployment import Deployment
from sim.drafting import decide, draft_part, longest_context
from sim.steps import DecodeRun, NormalStream, StepPlan, plan_decode_run, run_length
from sim.tree_step import decide_tree
from specsched.planner import Planner, StepDecision
from specsched.stepcost import StepShape, prefill_pairs


class Replica:
    """One engine: a FIFO queue of request ids and a running batch held in slot arrays.

    Slot state is one int64[10, max_num_seqs] array (rows: request id, prefill tokens left, tokens emitted,
    output length, domain, prompt length, and since admission: accepted drafts, decode steps, Σ ℓ; tokens
    emitted since the request last drafted, kept with drafter.intake_seconds) plus
    the latent float64[max_num_seqs], so leaving requests are compacted with one fancy index. A slot's
    KV is prompt + emitted − prefill left (prefill: what was computed; decode: prompt + output so far);
    `kv_used` and `n_decoding` keep the replica totals.
    """

    def __init__(self, index: int, eng: Deployment) -> None:
        self.index = index
        self.eng = eng
        s = eng.max_num_seqs
        self.queue: deque[int] = deque()
        self.n = 0
        self.n_decoding = 0
        self.kv_used = 0
        self.state = np.zeros((10, s), dtype=np.int64)
        (self.rid, self.pleft, self.gen, self.olen, self.dom, self.inp, self.acc, self.dsteps, self.lsum) = (
            self.state[:9]
        )
        self.pend = self.state[9]
        self.lat = np.zeros(s)
        # θ[dom] + latent by slot (`AcceptanceModel.offsets`), set at admission: the draws' fixed part
        self.offsets = np.zeros((s, eng.gamma)) if eng.vector_draws else None
        #: the one planning sequence (`specsched.Planner`, shared with the engine): policy and stale rows
        self.planner = Planner(
            eng.policy, s, eng.gamma, draft=eng.step.drafter, max_batch_tokens=eng.max_batch_tokens
        )
        self.wake: simpy.Event | None = None
        # Own streams (children spawned in replica order): a replica's draws never interleave with another's,
        # so deciding several steps at once, or simulating one replica alone, draws the same numbers.
        self.rng_truth, self.rng_conf, self.rng_verify = (
            g.spawn(1)[0] for g in (eng.rng_accept, eng.rng_conf, eng.rng_verify)
        )
        if eng.vector_draws:  # normal draws a decode pass drops are given back (`sim.steps.NormalStream`)
            self.rng_truth, self.rng_conf = NormalStream(self.rng_truth), NormalStream(self.rng_conf)
        #: () -> the next arrival for this replica alone when it is fed its own arrivals (`sim.routing`
        #: OpenLoop with rids); None: the deployment's horizon
        self.horizon = None
        self.tau_seen = 2.0  # tokens per request-step in pure-decode runs so far (sizes the next run)
        self.last_start = -np.inf  # start of the step in flight before this one (async scheduling)
        #: this replica's prefix cache (`sim.prefix_cache.PrefixCache`; the deployment's unless the pool
        #: gives each replica its own, `sim.wiring.Feed.cache`); None = off
        self.cache = eng.prefix_cache
        eng.replicas += 1
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
        env = eng.env
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
            yield from self._decode_run(plan)

    def _decode_run(self, plan: DecodeRun):
        """The K steps of a `DecodeRun`, then its per-slot totals (`_apply_run`).

        One timeout for all K, and one `Recorder.steps_run`, when nothing can observe the instants in
        between: a single replica (no other one records steps meanwhile), no observer, and the time bins
        not widening before the run's end. The step times are still summed as simpy sums K timeouts, and
        on_step still sees every step's end time. Otherwise one timeout and one `Recorder.step` a step.
        """
        eng = self.eng
        env, rec = eng.env, eng.recorder
        r, observer, bills = plan.r, eng.observer, plan.bills
        now = t = env.now
        times = [now]
        for seconds in bills.seconds:
            t += seconds  # as simpy adds each timeout to the time it was scheduled at
            times.append(t)
        delay = t - now
        if observer is None and eng.replicas == 1 and now + delay == t and rec.parts[self.index].bins.fits(t):
            yield env.timeout(delay)
            self.kv_used += sum(plan.emitted)
            args = (plan.verify, plan.emitted, plan.step_lengths, plan.step_accepted)
            rec.steps_run(self.index, times, bills.seconds, bills.draft, r, *args, bills)
            if eng.on_step is not None:
                for t in times[1:]:
                    eng.on_step(t)
            self._apply_run(plan)
            return
        for k, bill in enumerate(bills.each()):
            start, seconds, verify, emitted = env.now, bill.seconds, plan.verify[k], plan.emitted[k]
            yield env.timeout(seconds)
            lengths, accepted = plan.step_lengths[k], plan.step_accepted[k]
            self.kv_used += emitted  # step by step, as `_apply` would (observers read it)
            rec.step(self.index, start, seconds, bill.draft, r, verify, emitted, lengths, accepted, bill)
            if observer is not None:
                observer(self, start, seconds, r, verify, 0, lengths, accepted, emitted, bill)
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
            draft_s = float(eng.step.draft_s[r])
            decision = None
            if r and gamma:
                decision, accepted, draft_s = self._decide(di, r)
                lengths = decision.lengths
                verify = r + int(np.add.reduce(lengths))
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
            prefill = 0 if chunks is None else int(np.add.reduce(chunks))
            if verify + prefill > 0:
                break
            # Only prefilling requests whose next chunk does not fit in KV: free some and plan again.
            self._preempt_newest(now)
        # Attention reads every running request's KV once per step, prefilling ones included: a fixed
        # charge per request plus, for a context-aware table, one per KV token held (kv_used = Σ context).
        step = eng.step
        shape = StepShape(
            self.n, r, verify + prefill, verify,
            int(np.count_nonzero(chunks)) if prefill and step.prefill_request_s else 0,  # prefilling
            r * (1 + int(lengths.max())) if r and step.pad_s else 0,  # padded verify slots
            self.kv_used,
            longest_context(self) if step.context_pad_s else 0,  # longest running context
            depths=decision.depths if decision is not None else None,  # the bill's named draft parts
            tree_kv=self.kv_used if eng.tree is not None and r else 0,  # the tree kernel's KV (trees)
            pairs=prefill_pairs(chunks, self.inp[pf] - self.pleft[pf])  # causal prefill attention
            if prefill and step.cost.attn_pair_seconds else 0,
        )  # fmt: skip
        bill = step.bill(shape, draft_s)
        self.last_start = now
        args = (now, bill.seconds, verify, bill.draft, bill, decision)
        return StepPlan(di, r, lengths, accepted, pf, chunks, prefill, *args)

    def _decide(self, di, r: int) -> tuple[StepDecision, np.ndarray, float]:
        """(decision, accepted, draft seconds) of this step's r decoding slots `di` (accepted: int64[r]):
        draws, the planner (`sim.drafting.decide`: depths first with draft = "adaptive"), verification.

        A model with `draw_steps` (the parametric one) is drawn exactly as the run path draws one step,
        whatever the policy, draft mode or cost table, so those never change the random draws."""
        eng, model = self.eng, self.eng.model
        if eng.tree is not None:  # drafter.topk > 1: a draft tree (sim.tree_step); a chain never comes here
            return decide_tree(self, di, r)
        dom, lat = self.dom[di], self.lat[di]
        if eng.vector_draws:
            w, conf = model.draw_steps(dom, lat, 1, self.rng_truth, self.rng_conf, self.offsets[di])
            conf = conf[0]
        else:
            pos = {"position": self.gen[di]} if model.by_position else {}
            true, conf = model.step(dom, lat, self.rng_truth, self.rng_conf, **pos)
        decision = decide(self, di, r, conf)
        lengths, draft_s = decision.lengths, draft_part(self, di, r, decision)
        if eng.vector_draws:
            return decision, model.accept_steps(w, lengths[None], self.rng_verify)[0], draft_s
        return decision, model.sample_accepted(true, lengths, self.rng_verify), draft_s

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
        rid, held = int(self.rid[s]), int(self.inp[s] + self.gen[s] - self.pleft[s])
        self._leave(slice(s, s + 1))
        self.n = s
        if self.cache is not None:  # vLLM frees its blocks as cached ones: it resumes from what is left
            self.cache.release(self.eng.block_keys[rid], rid, held, self.eng.kv_tokens - self.kv_used)
        self.eng.recorder.preempted(rid, now, self.index)
        self.queue.appendleft(rid)

    def _admit(self, pf, chunks, room: int, now: float):
        """Admit waiting requests FIFO into free slots (module docstring, step 3: the one admission rule of
        every pool); returns prefill slots/chunks and the room left."""
        eng, rec = self.eng, self.eng.recorder
        new_slots, new_chunks = [], []
        cache, external, busy = self.cache, eng.external, eng.async_scheduling and self.n > 0
        pending = 0 if chunks is None else int(np.add.reduce(chunks))
        free = eng.kv_tokens - self.kv_used - (eng.gamma + 1) * self.n_decoding - pending
        if cache is not None:  # cached blocks live in free KV: what running requests took is evicted (LRU)
            cache.resize(max(0, (eng.kv_tokens - self.kv_used) // cache.block_size))
        while self.queue and room > 0 and self.n < eng.max_num_seqs:
            rid = self.queue[0]
            if busy and rec.arrival_s[rid] > self.last_start:
                break  # async scheduling: it arrived after the step in flight was scheduled
            done, prompt = int(rec.generated[rid]), int(eng.input_tokens[rid])
            ext = 0 if external is None else int(external[rid])
            hit = 0 if cache is None else cache.request_hit(eng.block_keys[rid], rid, prompt + done)
            held = max(ext, hit)
            todo = prompt + done - held  # the rest of its prompt + emitted tokens
            chunk = min(todo, room)
            if self.n and held + chunk + eng.gamma + 1 > free:
                break  # wait for KV to free up
            self.queue.popleft()
            rec.admitted(rid, now, self.index)
            if ext:
                external[rid] = 0  # handed-off KV is used once: a preempted request recomputes
            s, self.n = self.n, self.n + 1
            self.state[:, s] = (rid, todo, done, eng.output_tokens[rid], eng.domain[rid], prompt, 0, 0, 0, 0)
            self.lat[s] = eng.latent[rid]
            self.kv_used += held
            free, room = free - held - chunk, room - chunk
            new_slots.append(s)
            new_chunks.append(chunk)
        slots = np.asarray(new_slots, dtype=np.int64)
        if self.offsets is not None and new_slots:  # new slots are new_slots[0]..n−1
            new = slice(new_slots[0], self.n)
            self.offsets[new] = eng.model.offsets(self.dom[new], self.lat[new])
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
            if eng.step.intake_s:
                self.pend[di] += lengths + 1
            self.acc[di] += accepted
            self.dsteps[di] += 1
            self.lsum[di] += lengths
            emitted = int(np.add.reduce(emit))
        if pf is not None and pf.size:
            self.pleft[pf] -= chunks
            ready = pf[self.pleft[pf] == 0]
            if ready.size:  # prefill complete: the step also samples the next token
                if self.cache is not None:
                    self._cache_prompts(ready)
                self.gen[ready] += 1
                self.pend[ready] = 1
                emitted += int(ready.size)
                self.n_decoding += int(ready.size)
                rec.prefilled(self.rid[ready], now, self.index)
        self.kv_used += emitted + prefill
        step = (plan.start, plan.seconds, plan.draft_s, r, plan.verify, emitted, lengths, accepted, plan.bill)
        rec.step(self.index, *step)
        if eng.observer is not None:  # off by default (the timeline): one None check per step
            args = (plan.start, plan.seconds, r, plan.verify, prefill, lengths, accepted, emitted, plan.bill)
            eng.observer(self, *args)
        self._finish(now)
        if eng.on_step is not None:
            eng.on_step(now)

    def _cache_prompts(self, slots: np.ndarray) -> None:
        """Cache the prompt blocks of requests whose prefill just completed; the cache keeps to the blocks
        that the running requests' KV leaves free (vLLM evicts only free blocks, LRU)."""
        eng, cache = self.eng, self.cache
        for rid in self.rid[slots].tolist():
            if not isinstance(keys := eng.block_keys[rid], range):  # its own prompt (`own_keys`): no sharer
                cache.insert(keys)
        cache.resize(max(0, (eng.kv_tokens - self.kv_used) // cache.block_size))

    def _apply_run(self, run: DecodeRun) -> None:
        """The end of a `DecodeRun`: per-slot totals of its K steps (each step already recorded, and its
        emitted tokens already added to `kv_used`, by `run`)."""
        n = run.r
        self.gen[:n] += run.emit
        self.acc[:n] += run.accepted
        self.dsteps[:n] += len(run.bills.seconds)
        self.lsum[:n] += run.lengths
        self.tau_seen = 0.9 * self.tau_seen + 0.1 * sum(run.emitted) / (n * len(run.bills.seconds))
        if run.finished:
            self._finish(self.eng.env.now)

    def _finish(self, now: float) -> None:
        """Requests that reached their output length leave (completion callbacks run here)."""
        eng, rec = self.eng, self.eng.recorder
        n = self.n
        done = self.gen[:n] >= self.olen[:n]
        if np.logical_or.reduce(done):
            idx = np.flatnonzero(done)
            rids = self.rid[idx].copy()
            self._leave(idx)
            keep = ~done
            m = n - idx.size
            self.state[:, :m] = self.state[:, :n][:, keep]
            self.lat[:m] = self.lat[:n][keep]
            if self.offsets is not None:
                self.offsets[:m] = self.offsets[:n][keep]
            self.planner.compact(keep, n)
            self.n = m
            rec.finished(rids, now, self.index)
            if eng.on_complete is not None:
                eng.on_complete(rids, now)

    def _leave(self, idx) -> None:
        """Slots `idx` leave the batch: release their KV, copy their counters into the recorder."""
        rec = self.eng.recorder
        rids, gen, pleft = self.rid[idx], self.gen[idx], self.pleft[idx]
        self.kv_used -= int(np.add.reduce(self.inp[idx] + gen - pleft))
        self.n_decoding -= int(np.count_nonzero(pleft == 0))
        rec.generated[rids] = gen
        rec.decode_steps[rids] += self.dsteps[idx]
        rec.accepted[rids] += self.acc[idx]
        rec.verify_tokens[rids] += self.dsteps[idx] + self.lsum[idx]
