"""Run the real engine and record what happened, step by step and request by request.

Role: `InstrumentedEngine` is engine.loop.Engine plus recording; nothing in the decode path changes. It
wraps the policy (to see each step's confidences and chosen lengths), times the drafter's `propose` (draft
seconds), and times each step (`_spec_step` / `_plain_step`, overridden only to call the original between
two clock reads; see the report's request for a public per-step hook). `run_rollout` decodes a list of
requests and returns a `Rollout` of numpy arrays:

- per step s: start_s, end_s (seconds since generate() began), draft_s, R, verify tokens Σ(1 + ℓ), emitted;
- per request-step i: rid, step, ℓ (after the engine's value-blind cap at the tokens still owed),
  accepted (0..ℓ), conf float64[γ] (what the policy saw), raw_conf (the drafter's uncalibrated
  confidences when it exposes them), first (the request's first step: no target features yet);
- per request: arrival_s (0 for the first `max_running`, else the start of its first step: a closed loop
  with zero think time), first_token_s, finish_s, output tokens.

Clocks (`CLOCKS`): "wall" (time.perf_counter) or "process" (time.process_time: this process's CPU seconds,
all its threads). On a CPU shared with other jobs, wall time measures the neighbours as much as the engine;
the process clock is what the engine's steps take with the cores it uses to itself (torch with one thread:
one core). It cannot see GPU time: on CUDA use "wall" (the timed propose synchronizes the device).

May import: numpy, torch, stdlib, specsched, engine.* (never sim).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.loop import Engine, EngineConfig, Request
from specsched import CostTable


class _RecordingPolicy:
    """Delegates to a specsched Policy and keeps the last call's confidences and lengths."""

    def __init__(self, policy) -> None:
        self.inner = policy
        self.name, self.params = policy.name, policy.params
        self.uses_stale, self.delay, self.lossless = policy.uses_stale, policy.delay, policy.lossless
        self.last_conf: np.ndarray | None = None
        self.last_lengths: np.ndarray | None = None

    def __call__(self, conf, cost, *, stale=None, max_batch_tokens=None):
        lengths = self.inner(conf, cost, stale=stale, max_batch_tokens=max_batch_tokens)
        self.last_conf, self.last_lengths = np.array(conf, dtype=np.float64), np.asarray(lengths)
        return lengths


CLOCKS = {"wall": time.perf_counter, "process": time.process_time}


def clock_fn(name: str):
    if name not in CLOCKS:
        raise ValueError(f"clock: one of {', '.join(CLOCKS)}, got {name!r}")
    return CLOCKS[name]


class _TimedDrafter:
    """Delegates propose/release to a drafter and keeps the last propose's seconds (on `clock`)."""

    def __init__(self, drafter, clock) -> None:
        self.inner = drafter
        self.clock = clock
        self.last_s = 0.0

    def propose(self, reqs, gamma, exponentials):
        t = self.clock()
        out = self.inner.propose(reqs, gamma, exponentials)
        if out.tokens.is_cuda:  # CUDA is asynchronous: charge the drafter's kernels to the drafter
            import torch

            torch.cuda.synchronize(out.tokens.device)
        self.last_s = self.clock() - t
        return out

    def release(self, rid: int) -> None:
        self.inner.release(rid)


@dataclass
class Rollout:
    """Everything one generate() call recorded (see the module docstring); seconds, tokens."""

    steps: dict[str, np.ndarray]
    request_steps: dict[str, np.ndarray]
    requests: dict[str, np.ndarray]
    gamma: int
    wall_s: float

    def full_steps(self) -> np.ndarray:
        """bool mask over request-steps that verified all γ drafts and were not a request's first step."""
        rs = self.request_steps
        return (rs["length"] == self.gamma) & ~rs["first"]


class InstrumentedEngine(Engine):
    """engine.loop.Engine that records steps (see module docstring). `cost`: a CostTable to give the policy
    instead of `config.cost` (e.g. the profiled table with the measured draft seconds); clock: "wall" or
    "process" (module docstring)."""

    def __init__(
        self,
        target,
        drafter,
        config: EngineConfig,
        *,
        max_len: int = 512,
        cost: CostTable | None = None,
        clock: str = "wall",
    ):
        self._now = clock_fn(clock)
        timed = None if drafter is None else _TimedDrafter(drafter, self._now)
        super().__init__(target, timed, config, max_len=max_len)
        if cost is not None:
            self.cost = cost
        self.policy = _RecordingPolicy(self.policy)
        self._reset()

    def _reset(self) -> None:
        self._t0 = self._now()
        self._steps: list[tuple] = []
        self._rs: list[tuple] = []
        self._conf: list[np.ndarray] = []
        self._raw: list[np.ndarray] = []
        self._first: dict[int, float] = {}
        self._first_tok: dict[int, float] = {}
        self._finish: dict[int, float] = {}

    def generate(self, requests: Sequence[Request], *, speculative: bool = True):
        self._reset()
        return super().generate(requests, speculative=speculative)

    def _record(self, running, before, start: float, spec: bool) -> None:
        end = self._now() - self._t0
        gamma = self.config.gamma if spec else 0
        r = len(running)
        if spec and self.policy.last_lengths is not None:
            caps = np.array([max(b[1] - 1, 0) for b in before], dtype=np.int64)
            lengths = np.clip(self.policy.last_lengths, 0, caps)
            conf = self.policy.last_conf
            raw = getattr(self.drafter.inner, "last_raw_conf", None)
            raw = conf if raw is None else np.asarray(raw, dtype=np.float64)
            draft_s = self.drafter.last_s
        else:
            lengths, draft_s = np.zeros(r, dtype=np.int64), 0.0
            conf = raw = np.zeros((r, gamma))
        emitted = 0
        step = len(self._steps)
        for i, x in enumerate(running):
            n = len(x.output) - before[i][0]
            emitted += n
            first = x.rid not in self._first
            if first:
                self._first[x.rid] = start
                self._first_tok[x.rid] = end
            if x.remaining <= 0:
                self._finish[x.rid] = end
            self._rs.append((x.rid, step, int(lengths[i]), n - 1, first))
        self._conf.append(conf)
        self._raw.append(raw)
        self._steps.append((start, end, draft_s, r, int(r + lengths.sum()), emitted))

    def _spec_step(self, running) -> None:
        before = [(len(x.output), x.remaining) for x in running]
        start = self._now() - self._t0
        self.policy.last_lengths = None
        super()._spec_step(running)
        self._record(running, before, start, True)

    def _plain_step(self, running) -> None:
        before = [(len(x.output), x.remaining) for x in running]
        start = self._now() - self._t0
        super()._plain_step(running)
        self._record(running, before, start, False)

    def rollout(self, requests: Sequence[Request], wall_s: float, gamma: int) -> Rollout:
        steps = np.array(self._steps, dtype=np.float64).reshape(-1, 6)
        rs = np.array(self._rs, dtype=np.int64).reshape(-1, 5)
        conf = np.concatenate(self._conf) if self._conf else np.zeros((0, gamma))
        raw = np.concatenate(self._raw) if self._raw else np.zeros((0, gamma))
        rids = [q.rid for q in requests]
        first_batch = set(rids[: self.config.max_running])
        return Rollout(
            steps={
                "start_s": steps[:, 0],
                "end_s": steps[:, 1],
                "draft_s": steps[:, 2],
                "requests": steps[:, 3].astype(np.int64),
                "verify_tokens": steps[:, 4].astype(np.int64),
                "emitted": steps[:, 5].astype(np.int64),
            },
            request_steps={
                "rid": rs[:, 0],
                "step": rs[:, 1],
                "length": rs[:, 2],
                "accepted": rs[:, 3],
                "first": rs[:, 4].astype(bool),
                "conf": conf,
                "raw_conf": raw,
            },
            requests={
                "rid": np.array(rids, dtype=np.int64),
                "arrival_s": np.array([0.0 if q in first_batch else self._first[q] for q in rids]),
                "first_token_s": np.array([self._first_tok[q] for q in rids]),
                "finish_s": np.array([self._finish[q] for q in rids]),
                "output_tokens": np.array([q.max_new_tokens for q in requests], dtype=np.int64),
            },
            gamma=gamma,
            wall_s=wall_s,
        )


def check_device(device: str) -> None:
    """Raise InputError unless the engine can run on `device` here (EngineConfig's rule: "cpu" always,
    "cuda"/"cuda:N" when torch sees CUDA)."""
    from specsched.errors import InputError

    try:
        EngineConfig(device=device)
    except ValueError as e:
        raise InputError(str(e), field="--device") from None


def engine_config(device: str = "cpu", **kwargs) -> EngineConfig:
    """EngineConfig(**kwargs) on `device`."""
    return EngineConfig(device=device, **kwargs)


def run_rollout(
    target,
    drafter,
    config: EngineConfig,
    requests: Sequence[Request],
    *,
    max_len: int,
    cost: CostTable | None = None,
    speculative: bool = True,
    clock: str = "wall",
) -> tuple[Rollout, dict[int, list[int]]]:
    """Decode `requests` with a fresh InstrumentedEngine; returns (rollout, outputs by rid)."""
    eng = InstrumentedEngine(target, drafter, config, max_len=max_len, cost=cost, clock=clock)
    t = time.perf_counter()
    out = eng.generate(requests, speculative=speculative)
    return eng.rollout(requests, time.perf_counter() - t, config.gamma if speculative else 0), out
