"""The draft pass of a vLLM deployment with `drafter.model`: a drafter priced from its own shape.

Role: map a config with `cost.model` and `drafter.model` (a `specsched.price.draft_shape` preset, or a draft
LM such as llama3.2-1b: `specsched.draft_lm`) to the
`specsched.DraftCost` and drafter KV seconds its steps are priced with, on the target GPU's shipped
(no-speculation, calibrated) knobs — the same `step_s`, `c0`, `eta_bw`, `eta_f`, `eta_kv` as the target's
steps; the verify step is the target's own catalogue step at R·(1 + γ) tokens (`specsched.price.vllm`).
`drafter.engine` names how the serving engine runs the step (`specsched.price.spec_engine`): an EAGLE-style
drafter's first pass over the R·(1 + γ) verified positions, and the host work the engine exposes (its
per-request part at the bound of 1 + γ tokens a request emits a step: acceptance is not known here).

`accuracy(cfg)` is the error band a run's prediction carries (summary.json "accuracy").

May import: the standard library, `sim.config`, `sim.deploy.cost`, `specsched`.
"""

from __future__ import annotations

from sim.config import SimConfig
from sim.deploy.cost import config_spec
from specsched import DraftCost, InputError
from specsched.draft_lm import drafter_of
from specsched.io import inputs
from specsched.price.draft_shape import own_draft_cost
from specsched.price.knobs import KNOBS_FILE, shipped_knobs
from specsched.price.spec_engine import get_engine
from specsched.spec_knobs import engine_band, shipped_band


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
    shape = drafter_of(cfg.drafter.model, target)  # a preset, or a draft LM (specsched.draft_lm)
    top = max(cfg.server.max_num_seqs * gamma, cfg.server.max_num_seqs)
    knobs = shipped_knobs(spec.gpu)
    engine = cfg.drafter.engine
    return own_draft_cost(shape, target, gpu, knobs, gamma, top, tp=spec.tp, bpp=bpp, engine=engine)


def accuracy(cfg: SimConfig) -> dict:
    """The validated error bands a run's prediction carries, as flat summary.json keys ({} without
    `cost.model`): `accuracy_baseline_*` (the GPU's knobs file: e2e mean median |error| % on measured vLLM
    runs, in sample and leave-one-model-out) and, with `drafter.model`, `accuracy_spec_*` (the speculative
    knobs file: the speedup's median / worst |error| % on the dataset's train cases, in sample and
    leave-one-source-out; the engine version priced and whether those cases ran it; `accuracy_spec_engine_*`:
    that version's train / leave-one-source-out / check bands, and as `accuracy_spec_engine_tp_*` those of
    its tensor-parallel class, one GPU or several: `specsched.spec_knobs.engine_band`)."""
    if cfg.server.model is None:
        return {}
    spec = config_spec(cfg.server)
    out = {f"accuracy_baseline_{k}": v for k, v in knobs_entry(spec.gpu).items()}
    if cfg.drafter.model is not None and cfg.drafter.effective_gamma:
        band = shipped_band()
        engine = get_engine(cfg.drafter.engine).name
        out.update({
            "accuracy_spec_engine": engine,
            "accuracy_spec_engine_validated": engine in band.get("engines", []),
            "accuracy_spec_validated_on": list(band.get("engines", [])),
            "accuracy_spec_speedup_median_pct": band.get("median_pct"),
            "accuracy_spec_speedup_worst_pct": band.get("worst_pct"),
            "accuracy_spec_speedup_loso_median_pct": band.get("loso_median_pct"),
            "accuracy_spec_speedup_loso_worst_pct": band.get("loso_worst_pct"),
            # this engine version's own band, the check split (published, never fitted) included
            **{f"accuracy_spec_engine_{k}": v for k, v in engine_band(engine, spec.tp).items()},
        })  # fmt: skip
    return out


def knobs_entry(gpu: str) -> dict:
    """{"calibrated", "e2e_mean_median_pct", "e2e_mean_lomo_median_pct"} of the GPU's calibrated knobs."""
    doc = inputs.mapping(inputs.load_json(KNOBS_FILE, what="knobs file"), file=str(KNOBS_FILE))
    raw = (doc.get("gpus") or {}).get(gpu)
    if not isinstance(raw, dict):  # a GPU without measured runs: its knobs are carried, not calibrated
        return {"calibrated": False}
    return {"calibrated": True,
            "e2e_mean_median_pct": raw.get("in_sample_median_error_pct", {}).get("e2e_mean"),
            "e2e_mean_lomo_median_pct": raw.get("lomo_median_error_pct", {}).get("e2e_mean")}  # fmt: skip
