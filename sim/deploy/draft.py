"""The draft pass of a vLLM deployment with `drafter.model`: a drafter priced from its own shape.

Role: map a config with `cost.model` and `drafter.model` (a `specsched.draft_shape` preset) to the
`specsched.DraftCost` and drafter KV seconds its steps are priced with, on the target GPU's shipped
(no-speculation, calibrated) knobs — the same `step_s`, `c0`, `eta_bw`, `eta_f`, `eta_kv` as the target's
steps; the verify step is the target's own catalogue step at R·(1 + γ) tokens (`specsched.price.vllm`).
`drafter.engine` names how the serving engine runs the step (`specsched.spec_engine`): an EAGLE-style
drafter's first pass over the R·(1 + γ) verified positions, and the host work the engine exposes (its
per-request part at the bound of 1 + γ tokens a request emits a step: acceptance is not known here).

May import: the standard library, `sim.config`, `sim.deploy.cost`, `specsched`.
"""

from __future__ import annotations

from sim.config import SimConfig
from sim.deploy.cost import config_spec
from specsched import DraftCost, InputError
from specsched.price.draft_shape import drafter_shape, own_draft_cost
from specsched.price.knobs import shipped_knobs


def check_drafter_model(cfg: SimConfig) -> None:
    """InputError (one line, drafter.model) if `drafter.model` is set without a vLLM deployment."""
    if cfg.drafter.model is not None and cfg.server.model is None:
        raise InputError(
            "prices a drafter against the target's catalogue shape: set cost.model too",
            field="drafter.model",
        )


def own_drafter(cfg: SimConfig) -> tuple[DraftCost, float] | None:
    """(DraftCost, drafter seconds per KV token held) of `cfg`'s drafter priced from its shape; None
    without `drafter.model` or with nothing drafted."""
    gamma = cfg.drafter.effective_gamma
    if cfg.drafter.model is None or gamma == 0:
        return None
    check_drafter_model(cfg)
    spec = config_spec(cfg.server)
    target, gpu, bpp = spec.resolve()
    shape = drafter_shape(cfg.drafter.model, target)
    top = max(cfg.server.max_num_seqs * gamma, cfg.server.max_num_seqs)
    knobs = shipped_knobs(spec.gpu)
    engine = cfg.drafter.engine
    return own_draft_cost(shape, target, gpu, knobs, gamma, top, tp=spec.tp, bpp=bpp, engine=engine)
