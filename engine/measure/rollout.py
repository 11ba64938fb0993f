"""Run the real engine and record what happened, step by step and request by request.

Role: `RolloutRecorder` observes the engine (engine.loop.Engine's `observers`): it turns each step's
`engine.step.StepOutput` into rows; nothing in the decode path changes and nothing of the loop is
overridden. `run_rollout` decodes a list of requests and returns a `Rollout` of numpy arrays:

- per step s: start_s, end_s (seconds since generate() began), draft_s, R, verify tokens Σ(1 + ℓ), emitted,
  drafting (requests the drafter ran for) and drafted (positions it drafted);
- per request-step i: rid, step, ℓ (after the engine's value-blind cap at the tokens still owed),
  accepted (0..ℓ), conf float64[γ] (what the policy saw), raw_conf (the drafter's uncalibrated
  confidences when it exposes them), first (the request's first step: no target features yet);
- per request: arrival_s (0 for the first `max_running`, else the start of its first step: a closed loop
  with zero think time), first_token_s, finish_s, output tokens.

Speed probe (optional): every `probe_every` steps the recorder times a `SpeedProbe` (one target forward over
a fixed batch) between two steps and takes that time out of every later timestamp, so the rollout's times
are the engine's alone. The probe's time says how fast the machine ran the engine's kind of work just then
(a shared machine's speed drifts by several % over seconds): the rollout's step times are then expressed in
probe-normalized seconds, each step's duration × (probe.reference / the median of the probe times around
it), i.e. seconds at the speed the machine had when the probe was calibrated. Rollouts measured with one
probe (a profile and a run) are then comparable even if the machine's speed moved in between;
`Rollout.probe_s` holds the raw probe times.

Clocks (`engine.step.CLOCKS`, EngineConfig.clock): "wall" or "process" (this process's CPU seconds: on a
CPU shared with other jobs it measures what the engine's steps take on the cores it uses; it cannot see GPU
time, so on CUDA use "wall").

May import: numpy, torch, stdlib, specsched, engine.* (never sim).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from engine.loop import Engine, EngineConfig, Request
from engine.step import CLOCKS, StepOutput, full_rows
from specsched import CostTable


def clock_fn(name: str):
    if name not in CLOCKS:
        raise ValueError(f"clock: one of {', '.join(CLOCKS)}, got {name!r}")
    return CLOCKS[name]


@dataclass
class Rollout:
    """Everything one generate() call recorded (see the module docstring); seconds, tokens."""

    steps: dict[str, np.ndarray]
    request_steps: dict[str, np.ndarray]
    requests: dict[str, np.ndarray]
    gamma: int
    wall_s: float
    probe_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the speed probe's seconds

    def full_steps(self) -> np.ndarray:
        """bool mask over request-steps that verified all γ drafts and were not a request's first step."""
        rs = self.request_steps
        return full_rows(rs["length"], rs["first"], self.gamma)


class SpeedProbe:
    """A fixed slice of the engine's work: one forward of `target` over `rows` × `tokens` tokens at a fixed
    context, on its own small KV cache. Called between steps, its time says how fast the machine runs this
    kind of work right now (module docstring)."""

    def __init__(self, target, rows: int = 8, tokens: int = 4, context: int = 32) -> None:
        from engine.model import KVCache

        cfg = target.config
        context = max(0, min(context, cfg.max_len - tokens))
        dev = next(iter(target.w.values())).device
        self.target, self.context = target, context
        self.cache = KVCache(cfg, rows, context + tokens, device=dev)
        self.tokens = torch.ones((rows, tokens), dtype=torch.int64, device=dev)
        self.n_valid = torch.full((rows,), tokens, dtype=torch.int64, device=dev)
        self.slots = torch.arange(rows, device=dev)
        self.reference = 0.0
        self.reference = self.calibrate()

    def calibrate(self, calls: int = 41, clock: str = "process") -> float:
        """The median time of `calls` probes on `clock` (seconds): the unit of probe-normalized time."""
        now = clock_fn(clock)
        times = []
        for _ in range(calls):
            t = now()
            self()
            times.append(now() - t)
        return float(np.median(times))

    def __call__(self) -> None:
        with torch.inference_mode():
            self.cache.lengths[:] = self.context
            self.target.run(self.tokens, self.n_valid, self.slots, self.cache, hidden=True)


class RolloutRecorder:
    """An engine observer: keeps every StepOutput of one generate() call; `rollout` assembles the arrays.
    With a `probe`, times it every `every` steps on `clock` and shifts later steps' times back by it."""

    def __init__(self, probe=None, every: int = 8, clock: str = "wall") -> None:
        self.outputs: list[StepOutput] = []
        self.probe, self.every, self._now = probe, max(int(every), 1), clock_fn(clock)
        self.offset = 0.0  # seconds spent probing so far: taken out of every later step's times
        self.probe_s: list[float] = []

    def __call__(self, out: StepOutput) -> None:
        if self.offset:
            out = replace(out, start_s=out.start_s - self.offset, end_s=out.end_s - self.offset)
        self.outputs.append(out)
        if self.probe is not None and len(self.outputs) % self.every == 0:
            t = self._now()
            self.probe()
            took = self._now() - t
            self.probe_s.append(took)
            self.offset += took

    def _per_request(self, start, end) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
        """(first step's start, first step's end, finishing step's end) by rid, from the steps' times."""
        first, first_tok, finish = {}, {}, {}
        for s, out in enumerate(self.outputs):
            for rid, is_first, done in zip(out.rids.tolist(), out.first, out.finished):
                if is_first:
                    first[rid], first_tok[rid] = start[s], end[s]
                if done:
                    finish[rid] = end[s]
        return first, first_tok, finish

    def _times(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start_s, end_s, draft_s) float64[steps]: as measured, or probe-normalized (module docstring):
        steps i·every .. i·every + every − 1 precede probe i; each step (and the gap before it) is scaled by
        reference / the running median of 5 probe times around its own."""
        outs = self.outputs
        start = np.array([o.start_s for o in outs])
        end = np.array([o.end_s for o in outs])
        draft = np.array([o.draft_s for o in outs])
        ref = getattr(self.probe, "reference", 0.0)
        if not self.probe_s or not ref or not outs:
            return start, end, draft
        p = np.array(self.probe_s)
        pad = np.concatenate([np.full(2, p[0]), p, np.full(2, p[-1])])
        smooth = np.median(np.lib.stride_tricks.sliding_window_view(pad, 5), axis=1)
        window = np.minimum(np.arange(len(outs)) // self.every, p.size - 1)
        f = ref / smooth[window]
        seg = end - np.concatenate([[0.0], end[:-1]])  # the step and the gap before it
        new_end = np.cumsum(seg * f)
        return new_end - (end - start) * f, new_end, draft * f

    def rollout(self, requests: Sequence[Request], wall_s: float, gamma: int, max_running: int) -> Rollout:
        outs = self.outputs
        cat = np.concatenate
        step_ids = [np.full(o.rids.size, s, dtype=np.int64) for s, o in enumerate(outs)]
        rows = {
            "rid": [o.rids for o in outs],
            "step": step_ids,
            "length": [o.lengths for o in outs],
            "accepted": [o.accepted for o in outs],
            "first": [o.first for o in outs],
        }
        request_steps = {k: cat(v) if outs else np.zeros(0, dtype=np.int64) for k, v in rows.items()}
        request_steps["first"] = request_steps["first"].astype(bool)
        for key, attr in (("conf", "conf"), ("raw_conf", "raw_conf")):
            request_steps[key] = cat([getattr(o, attr) for o in outs]) if outs else np.zeros((0, gamma))
        start, end, draft = self._times()
        first, first_tok, finish = self._per_request(start, end)
        rids = [q.rid for q in requests]
        first_batch = set(rids[:max_running])
        return Rollout(
            steps={
                "start_s": start,
                "end_s": end,
                "draft_s": draft,
                "requests": np.array([o.rids.size for o in outs], dtype=np.int64),
                "verify_tokens": np.array([o.verify_tokens for o in outs], dtype=np.int64),
                "emitted": np.array([int(o.emitted.sum()) for o in outs], dtype=np.int64),
                "drafting": np.array([o.drafting for o in outs], dtype=np.int64),
                "drafted": np.array([o.drafted for o in outs], dtype=np.int64),
            },
            request_steps=request_steps,
            requests={
                "rid": np.array(rids, dtype=np.int64),
                "arrival_s": np.array([0.0 if q in first_batch else first[q] for q in rids]),
                "first_token_s": np.array([first_tok[q] for q in rids]),
                "finish_s": np.array([finish[q] for q in rids]),
                "output_tokens": np.array([q.max_new_tokens for q in requests], dtype=np.int64),
            },
            gamma=gamma,
            wall_s=wall_s - self.offset,
            probe_s=np.array(self.probe_s),
        )


def check_device(device: str) -> None:
    """Raise InputError unless the engine can run on `device` here (EngineConfig's rule: "cpu" always,
    "cuda"/"cuda:N" when torch sees CUDA)."""
    from specsched.io.errors import InputError

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
    probe=None,
    probe_every: int = 8,
) -> tuple[Rollout, dict[int, list[int]]]:
    """Decode `requests` with a fresh engine observed by a RolloutRecorder; returns (rollout, outputs by rid).
    `cost`: a CostTable for the policy instead of `config.cost` (e.g. the profiled table with the measured
    draft seconds); `clock`: "wall" or "process"; `probe`: a SpeedProbe timed every `probe_every` steps
    (module docstring)."""
    clock_fn(clock)
    config = replace(config, clock=clock) if cost is None else replace(config, clock=clock, cost=cost)
    recorder = RolloutRecorder(probe, probe_every, clock)
    eng = Engine(target, drafter, config, max_len=max_len, observers=[recorder])
    t = time.perf_counter()
    out = eng.generate(requests, speculative=speculative)
    gamma = config.gamma if speculative else 0
    return recorder.rollout(requests, time.perf_counter() - t, gamma, config.max_running), out
