"""How the engine is configured: a generation `Request`, the frozen `EngineConfig`, and the engine's planner.

Role: the inputs of `engine.loop.Engine` (validated in `__post_init__`, one error naming the field) and
`make_planner`, which builds the `specsched.Planner` the engine plans every speculative step with (the
simulator's replicas build theirs the same way: tests/test_planner_shared.py).

May import: torch, numpy, stdlib, specsched, engine.sampling, engine.step, engine.verify.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

import specsched
from engine.sampling import SamplingParams
from engine.step import CLOCKS
from engine.verify import BACKENDS

MODES = ("standard", "coupled")


@dataclass(frozen=True)
class Request:
    """A generation request: prompt token ids, tokens to generate, sampling params, seed (noise key)."""

    rid: int
    prompt: tuple[int, ...]
    max_new_tokens: int
    params: SamplingParams = SamplingParams()
    seed: int = 0

    def __post_init__(self) -> None:
        if self.rid < 0 or self.seed < 0:
            raise ValueError(f"Request {self.rid}: fields 'rid' and 'seed' must be >= 0")
        if len(self.prompt) < 1:
            raise ValueError(f"Request {self.rid}: field 'prompt' must hold at least one token")
        if self.max_new_tokens < 1:
            raise ValueError(f"Request {self.rid}: field 'max_new_tokens' must be >= 1")


@dataclass(frozen=True)
class EngineConfig:
    """gamma: drafts per request per step; policy/policy_params: a specsched policy; cost: a specsched
    CostTable or cost spec (built-in name or CSV path); mode: "standard" (rejection sampling) or "coupled";
    backend: rejection-sampling backend (coupled mode verifies by sampler-match in torch);
    max_batch_tokens: cap on Σ(1 + ℓ); stale_prior: stale conf of young requests (a number, or γ numbers:
    a population curve); draft_cost: how a draft-aware policy prices the draft pass (a
    specsched.DraftCost; None = one target-sized layer over the drafted positions; the cost table's own
    draft_seconds, the full pass's figure for full drafting, is then not charged on top, as the simulator
    prices an adaptive step);
    max_running: requests decoded together (cache slots); device: torch device of the cache, noise and
    step tensors ("cpu", "cuda" or "cuda:N"; the models must already be there); clock: what a StepOutput's
    times are read on (CLOCKS)."""

    gamma: int = 4
    policy: str = "dspark"
    policy_params: Mapping[str, object] = field(default_factory=dict)
    cost: str | specsched.CostTable = "h200-dense8b"
    mode: str = "standard"
    backend: str = "torch"
    max_batch_tokens: int | None = None
    stale_prior: float | tuple[float, ...] = 0.0
    max_running: int = 16
    device: str = "cpu"
    draft_cost: specsched.DraftCost | None = None
    clock: str = "wall"

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise ValueError(f"EngineConfig field 'clock': one of {', '.join(CLOCKS)}, got {self.clock!r}")
        if self.gamma < 0:
            raise ValueError(f"EngineConfig field 'gamma': must be >= 0, got {self.gamma}")
        if self.mode not in MODES:
            raise ValueError(f"EngineConfig field 'mode': one of {MODES}, got {self.mode!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"EngineConfig field 'backend': one of {BACKENDS}, got {self.backend!r}")
        prior = np.asarray(self.stale_prior, dtype=np.float64)
        bad_shape = prior.ndim > 1 or (prior.ndim == 1 and prior.size != self.gamma)
        if bad_shape or not np.all((prior >= 0) & (prior <= 1)):
            raise ValueError(
                f"EngineConfig field 'stale_prior': a number or {self.gamma} numbers in [0, 1], "
                f"got {self.stale_prior}"
            )
        if self.policy_params.get("draft") == "adaptive" and not np.all(prior > 0):
            # Positions a young request is given 0 for are never drafted, so never recorded: the request
            # would keep that depth (0 for a prior of 0.0, the full-drafting default) for its whole life.
            raise ValueError(
                "EngineConfig field 'stale_prior': draft='adaptive' needs a prior > 0 at every position "
                "(the population curve: mean draft confidence per position, as the simulator's domains "
                f"give it), got {self.stale_prior}"
            )
        if self.max_running < 1:
            raise ValueError(f"EngineConfig field 'max_running': must be >= 1, got {self.max_running}")
        budget = self.max_batch_tokens
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValueError(
                f"EngineConfig field 'max_batch_tokens': a positive integer or None, got {budget!r}"
            )
        try:
            kind = torch.device(self.device).type
        except (RuntimeError, TypeError):
            kind = None
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"EngineConfig field 'device': 'cpu', 'cuda' or 'cuda:N', got {self.device!r}")
        if kind == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"EngineConfig field 'device': {self.device!r} but CUDA is not available here")


def make_planner(policy, config: EngineConfig, cost: specsched.CostTable):
    """(the engine's `specsched.Planner`, the table it plans on): the policy with a stale buffer by cache
    slot, the young requests' prior `stale_prior` and the draft cost (`draft_cost`; None = one
    target-sized layer over the drafted positions). An adaptive step's draft pass is priced from its
    depths, never as the table's draft_seconds (what a caller sets to the full pass) on top of it."""
    adaptive = getattr(policy, "draft", "full") == "adaptive"
    draft = config.draft_cost or specsched.DraftCost("parallel", 1.0)
    budget = config.max_batch_tokens
    planner = specsched.Planner(
        policy,
        config.max_running,
        config.gamma,
        draft=draft,
        max_batch_tokens=budget,
        prior=config.stale_prior,
    )
    return planner, cost.with_draft(0.0) if adaptive else cost
