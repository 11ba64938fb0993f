"""One replica's step decisions as plain dataclasses, and the multi-step pure-decode fast path.

Role: `StepPlan` is what `Replica._plan` decided for one engine step and `Replica._apply` carries out (like
vLLM v1's SchedulerOutput). `DecodeRun` is K ≥ 1 consecutive pure-decode steps of a fixed batch decided in
one vectorized pass (`plan_decode_run`): the same draws, the same policy decisions and the same step
times as K single steps, because nothing that could change them happens before the last step starts:

- every running request is decoding, and no admission is possible (empty queue or a full batch);
- no preemption: the KV held plus the γ + 1 reservation fits for every step even if every draft is taken;
- the pass draws a guess of k steps, then keeps only those up to the first that finishes a request and
  those that start strictly before the horizon (the replica's own `horizon` when it is fed alone, else
  `Deployment.horizon()`: the next arrival in open loop, simpy's next event otherwise); the draws of the
  steps it drops are given back (the normals to their `NormalStream`, which serves them first next time; the
  uniform stream stepped back), so every stream gives exactly the numbers single steps would have drawn.

Truth noise, estimate noise and the accept uniforms each have their own stream, consumed step after step
in both paths, so a run gives the same result whatever the pass lengths (tests/sim/test_decode_run.py).

May import: numpy, the standard library, `specsched.stepcost`, `specsched.planner`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from specsched.planner import StepDecision
from specsched.stepcost import RunBills, StepBill

#: Most steps decided in one pass (memory: K·R·γ floats per array).
MAX_RUN = 256


class NormalStream:
    """A Generator's standard normals in order, with the tail of the last draw given back (`unget`): the
    next draw starts with it, so the numbers come out exactly as if the tail had never been drawn (numpy's
    Generator draws normals one after another, with no state between calls but the bit generator's).

    Only `standard_normal(shape)` is offered: what `AcceptanceModel.draw_steps` takes from its streams;
    callers must not write into the arrays it returns (they may be handed out again).
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.back: np.ndarray | None = None  # float64[m]: given-back numbers, served first
        self.last: np.ndarray | None = None  # the last draw (float64, any shape)

    def standard_normal(self, shape: tuple[int, ...]) -> np.ndarray:
        back = self.back
        if back is None:
            out = self.rng.standard_normal(shape)
        else:
            size = math.prod(shape)
            if back.size > size:
                out, self.back = back[:size].reshape(shape), back[size:]
            else:
                out = np.concatenate((back, self.rng.standard_normal(size - back.size))).reshape(shape)
                self.back = None
        self.last = out
        return out

    def unget(self, steps: int) -> None:
        """Give back the last draw past its first `steps` rows (axis 0)."""
        tail = self.last[steps:].reshape(-1)
        self.back = tail if self.back is None else np.concatenate((tail, self.back))
        self.last = None


@dataclass
class StepPlan:
    """One engine step (`Replica._plan` -> `Replica._apply`).

    decoding: slots of the decoding requests (slice when all running requests decode); r: their count;
    lengths, accepted: int64[r] verify lengths and accepted drafts; prefill_slots, chunks: int64[p] slots
    prefilling this step and their chunk sizes (None when none could); prefill_tokens: Σ chunks; start,
    seconds: step start (simulated s) and duration; verify: Σ (1 + ℓ_r) verify tokens; draft_s: the draft
    pass's seconds (part of `seconds`; priced from the planned depths with draft = "adaptive"); bill: the
    step's price by part (`specsched.stepcost.StepBill`, `seconds` and `draft_s` are two of its fields);
    decision: the planner's `specsched.StepDecision` (depths, lengths; None without speculation).
    """

    decoding: slice | np.ndarray
    r: int
    lengths: np.ndarray
    accepted: np.ndarray
    prefill_slots: np.ndarray | None
    chunks: np.ndarray | None
    prefill_tokens: int
    start: float
    seconds: float
    verify: int
    draft_s: float
    bill: StepBill | None = None
    decision: StepDecision | None = None


@dataclass
class DecodeRun:
    """K ≥ 1 pure-decode steps of slots 0..r−1 (`plan_decode_run`).

    bills: the steps' prices (`specsched.stepcost.RunBills`; `seconds`: float per step); verify, emitted: int
    per step (Σ (1 + ℓ), tokens emitted); emit, accepted, lengths: int64[r] per-slot totals over the K steps
    (emit already cut at the output length); finished: whether a request completes at the end of the last
    step; step_lengths, step_accepted: int64[K, r] the same by step (what `Recorder.step` and observers see
    for each step).
    """

    r: int
    bills: RunBills
    verify: list[int]
    emitted: list[int]
    emit: np.ndarray
    accepted: np.ndarray
    lengths: np.ndarray
    finished: bool  # some request reached its output length at the end of the last step
    step_lengths: np.ndarray
    step_accepted: np.ndarray

    @property
    def seconds(self) -> list[float]:
        """Each step's seconds."""
        return self.bills.seconds


def run_length(rep, now: float) -> int:
    """How many pure-decode steps to draw in one pass from `now` (≤ 1: take the single-step path).

    `rep` is a `sim.server.Replica` whose running requests all decode and that preempted nothing this step.
    The pass may keep fewer (`plan_decode_run`); this bounds the draws: every request emits ≥ 1 token a
    step (so the first completion comes within `owed` steps), KV must fit for every step even if every
    draft is taken, and every step starts before the horizon.
    """
    eng, n = rep.eng, rep.n
    if rep.queue and n < eng.max_num_seqs:
        return 1
    owed = int(np.minimum.reduce(rep.olen[:n] - rep.gen[:n]))
    # The first completion is expected after about owed / τ steps (τ: tokens per request-step so far on
    # this replica); draws past the completion are given back, so the guess costs time, never results.
    # (Measured on the Azure replay: drawing 1.5× that saves 6 % of the passes and costs more than it saves.)
    fits = (eng.kv_tokens - rep.kv_used) // ((eng.gamma + 1) * n)
    k = min(MAX_RUN, int(owed / rep.tau_seen) + 1, fits)
    if k < 2:
        return 1
    room = (rep.horizon or eng.horizon)() - now
    if room == math.inf:
        return k
    return min(k, math.ceil(room / eng.shortest_step(n)))


def plan_decode_run(rep, k: int, now: float) -> DecodeRun:
    """Decide up to k pure-decode steps of `rep`'s whole running batch in one pass (module doc).

    Keeps the steps up to the first that finishes a request or starts at or after the horizon, and gives
    the draws of the others back to the streams, so they stay where single steps would have left them.
    """
    eng, n = rep.eng, rep.n
    model, rng_t, rng_c, rng_v = eng.model, rep.rng_truth, rep.rng_conf, rep.rng_verify
    w, conf = model.draw_steps(rep.dom[:n], rep.lat[:n], k, rng_t, rng_c, rep.offsets[:n])
    lengths = rep.planner.lengths_many(conf, eng.view(n))
    accepted = model.accept_steps(w, lengths, rng_v)
    verify = np.add.reduce(lengths, axis=1)
    verify += n
    verify = verify.tolist()
    # the K bills in Python floats (the same IEEE additions, in the same order, as `StepCost.bill`)
    padded = (n * (1 + lengths.max(axis=1, initial=0))).tolist() if eng.step.pad_s else None
    bills = eng.step.bills(n, verify, padded)
    seconds = bills.seconds
    horizon, t, keep = (rep.horizon or eng.horizon)(), now, 0
    for step in seconds:  # start times summed left to right, as simpy sums them
        if not t < horizon:
            break
        keep += 1
        t += step
    owed = rep.olen[:n] - rep.gen[:n]
    emit = accepted + 1
    total = emit.cumsum(axis=0)
    done = np.logical_or.reduce(
        total >= owed, axis=1
    )  # by step: has some request finished by its end (monotone)
    first = int(done.argmax())
    if done[first]:
        keep = min(keep, first + 1)
    if keep < k:  # give back the draws of steps keep..k−1
        model.unget_steps(keep, rng_t, rng_c)
        rng_v.bit_generator.advance(-(k - keep) * n * eng.gamma)
    slot_emit = np.minimum(total[keep - 1], owed)  # only the last kept step can finish one
    emitted = np.add.reduce(emit[:keep], axis=1).tolist()
    emitted[-1] = int(np.add.reduce(slot_emit)) - sum(emitted[:-1])
    return DecodeRun(
        n,
        bills if keep == k else bills.first(keep),
        verify[:keep],
        emitted,
        slot_emit,
        np.add.reduce(accepted[:keep]),
        np.add.reduce(lengths[:keep]),
        bool(done[keep - 1]),
        lengths[:keep],
        accepted[:keep],
    )
