"""What one step of the decode loop did: the engine's step output, its counters, and its clocks.

Role: `StepOutput` is a plain record (like vLLM's SchedulerOutput) that `engine.loop.Engine` returns from
every step and hands to its observers: the measurement code (engine.measure.rollout) and the trainer's STS
fitting read the loop through it and never reach into the loop's internals. `EngineStats` are the running
counters of one generate() call. `full_rows` is the one definition of the request-steps curves and STS are
measured on.

May import: numpy, stdlib, `specsched.planner` (StepDecision).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from specsched.planner import StepDecision

# "wall": time.perf_counter; "process": this process's CPU seconds (all its threads): on a CPU shared with
# other jobs it measures the engine's own work, not the neighbours'. It cannot see GPU time: on CUDA use wall.
CLOCKS = {"wall": time.perf_counter, "process": time.process_time}


def full_rows(lengths: np.ndarray, first: np.ndarray, gamma: int) -> np.ndarray:
    """bool mask of request-steps that verified all γ drafts and were not their request's first step (which
    has no target features yet): the rows acceptance curves and STS temperatures are measured on."""
    return (np.asarray(lengths) == gamma) & ~np.asarray(first, dtype=bool)


@dataclass(frozen=True)
class StepOutput:
    """What one engine step did, for its R running requests in batch order (plain steps: γ = 0 columns).

    rids int64[R]; first bool[R] (the request's first step: it fed the prompt); finished bool[R];
    conf float64[R, γ] (what the policy saw), raw_conf float64[R, γ] (the drafter's uncalibrated ones, or
    conf); planned int64[R] (the policy's lengths), lengths int64[R] (verified: planned capped by the tokens
    still owed); accepted int64[R] (accepted drafts, 0..ℓ); emitted int64[R] (tokens appended to outputs);
    start_s, draft_s, end_s: the step's start and end (seconds on EngineConfig.clock since generate()
    began) and the seconds the drafter's propose took (0 for plain steps); drafting: requests the drafter
    ran for (R with full drafting, #{depth > 0} with planned depths, 0 for plain steps) and drafted: the
    positions they drafted (R·γ, Σ depth, 0): what the draft pass is priced from (specbed fidelity);
    decision: the planner's `specsched.StepDecision` (depths, lengths), the one the simulator's
    `StepPlan` carries too (None for plain steps)."""

    rids: np.ndarray
    first: np.ndarray
    finished: np.ndarray
    conf: np.ndarray
    raw_conf: np.ndarray
    planned: np.ndarray
    lengths: np.ndarray
    accepted: np.ndarray
    emitted: np.ndarray
    start_s: float
    draft_s: float
    end_s: float
    drafting: int = 0
    drafted: int = 0
    decision: StepDecision | None = None

    @property
    def verify_tokens(self) -> int:
        """B = Σ(1 + ℓ_r): the tokens the target verified this step."""
        return int(self.rids.size + self.lengths.sum())


@dataclass
class EngineStats:
    """Counters of one generate() call: steps, verify tokens B = Σ(1 + ℓ), drafted positions (what the
    drafter was asked for: R·γ per step with full drafting, Σ depth with planned depths), drafts verified
    and accepted."""

    steps: int = 0
    verify_tokens: int = 0
    drafted: int = 0
    verified_drafts: int = 0
    accepted: int = 0
    emitted: int = 0
    seconds: float = 0.0

    def count(self, requests: int, ells: list[int], emitted: list[int], drafted: int) -> None:
        """Add one speculative step of `requests` requests: verify lengths `ells`, tokens `emitted`,
        positions `drafted`."""
        verified = sum(ells)
        self.steps += 1
        self.verify_tokens += requests + verified
        self.drafted += drafted
        self.verified_drafts += verified
        self.accepted += sum(emitted) - requests
        self.emitted += sum(emitted)

    @property
    def acceptance(self) -> float:
        """accepted / verified drafts (drafts after a rejection count as not accepted)."""
        return self.accepted / self.verified_drafts if self.verified_drafts else float("nan")
