"""The speculative arm's fitted knobs: their physical priors, hard bounds and the shipped values.

Role: `SpecKnobs` holds the few terms of the speculative step that the engines' code does not fix (the counts
and kernels are read from code: `specsched.spec_versions`); `PRIORS` / `BOUNDS` are what
`specbed cost calibrate --spec` (`validate.spec_fit`) fits them against; `shipped_spec_knobs()` reads
`specsched/data/spec_knobs.json`, which that command writes from the dataset's `train` cases.

    op_s        host seconds to issue one eager launch (Python → dispatcher → cudaLaunchKernel): the
                dispatch chain's layers sum to 5–25 µs; prior 10 ± 5 µs, bounds 3–40 µs
    mask_eff    the fraction of the decode path's KV bandwidth FlashInfer's custom-mask prefill kernel
                reaches on a verify pass (K + 1 queries a request); prior 0.6 ± 0.25, bounds 0.1–1
    host_scale  a factor on SGLang's measured per-request scheduler loops (`spec_engine`); prior 1 ± 0.5,
                bounds 0.5–4 (the loop model skips the real objects' extra fields, zmq and the detokenizer)
    ngram_draft_frac
                the fraction of a request's steps in which the n-gram proposer finds a prompt match and
                drafts K tokens; in the others it drafts nothing and the request verifies its one token
                (vLLM V1 `NgramProposer.propose` returns None without a match, the scheduler then schedules
                one token). A workload's match rate: SpecDecode-Bench's Llama-3.1-8B traces at K = 3 emit
                more than one token in 8.5–27 % of steps (a lower bound) and its simulator (`simulator.py`
                NGRAM_MATCHING_PROBABILITY) puts the rate at 0.27–0.86 over GSM8K … InstructCoder; prior
                0.5 ± 0.25, bounds 0.05–1 (1: every step drafts, the replay before session 4's train data)

May import: the standard library, `specsched.io` (errors, inputs), `specsched.price.knobs`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

from specsched.io.errors import InputError

#: knob -> (prior mean, prior sd), (lower bound, upper bound)
PRIORS = {
    "op_s": (10e-6, 5e-6), "mask_eff": (0.6, 0.25), "host_scale": (1.0, 0.5), "ngram_draft_frac": (0.5, 0.25)
}  # fmt: skip
BOUNDS = {
    "op_s": (3e-6, 40e-6), "mask_eff": (0.1, 1.0), "host_scale": (0.5, 4.0), "ngram_draft_frac": (0.05, 1.0)
}  # fmt: skip
SPEC_KNOBS_FILE = Path(__file__).parent / "data" / "spec_knobs.json"


@dataclass(frozen=True)
class SpecKnobs:
    """The fitted terms of the speculative step (module docstring); defaults are the priors."""

    op_s: float = PRIORS["op_s"][0]
    mask_eff: float = PRIORS["mask_eff"][0]
    host_scale: float = PRIORS["host_scale"][0]
    ngram_draft_frac: float = PRIORS["ngram_draft_frac"][0]

    def __post_init__(self) -> None:
        for name, (lo, hi) in BOUNDS.items():
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or not lo <= v <= hi
            ):
                raise InputError(
                    f"must be a number in [{lo:g}, {hi:g}], got {v!r}", field=f"spec_knobs.{name}"
                )

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict, *, file: str | None = None) -> SpecKnobs:
        from specsched.price.knobs import knobs_from_dict  # the one reader of a knobs mapping

        return knobs_from_dict(cls, raw, file=file)


def _shipped() -> dict:
    """The shipped knobs file as a mapping, read through `specsched.io.inputs` (a malformed or missing file
    is one InputError naming it, never a silent fall-back to the priors)."""
    from specsched.io import inputs

    return inputs.mapping(inputs.load_json(SPEC_KNOBS_FILE, what="speculative knobs file"),
                          file=str(SPEC_KNOBS_FILE))  # fmt: skip


def shipped_spec_knobs() -> SpecKnobs:
    """The knobs `specbed cost calibrate --spec` gave on the dataset's train cases."""
    return SpecKnobs.from_dict(_shipped().get("knobs"), file=str(SPEC_KNOBS_FILE))


def shipped_band() -> dict:
    """The validated error band of the speculative arm shipped beside the knobs ({} without one):
    {"median_pct", "worst_pct", "loso_median_pct", "cases", "engines"}."""
    band = _shipped().get("band", {})
    return band if isinstance(band, dict) else {}


def tp_class(tp: int) -> str:
    """The band class of a deployment's tensor parallelism: "1" (one GPU) or ">1" (`engine_band`)."""
    return "1" if tp <= 1 else ">1"


def engine_band(engine: str, tp: int | None = None) -> dict:
    """The shipped band of one engine version, or of its family ("of": "vllm-*") where the dataset has no
    modelled case of that version ({} where it has none of the family):
    "train_*", "loso_*" and "check_*" median / worst |error| % of the speed-up and case counts, "sign_right"
    of "sign_cases" — written by `specbed cost calibrate --spec` from the dataset
    (`validate.spec_replay.engine_bands`); the check figures are the knobs' unseen error, never fitted.
    With `tp`: also "tp_class" ("1" or ">1") and that class's own figures as "tp_<key>" (the version's cases
    at that class, else its family's; absent where neither has one: the class is not validated)."""
    by = shipped_band().get("by_engine", {})
    if not isinstance(by, dict):
        return {}
    keys = (engine, engine.split("-")[0] + "-*")  # the version's own cases, else its family's
    out: dict = {}
    for key in keys:
        if isinstance(by.get(key), dict):
            out = {"of": key, **{k: v for k, v in by[key].items() if k != "tp"}}
            break
    if tp is None or not out:
        return out
    cls = tp_class(tp)
    out["tp_class"] = cls
    for key in keys:
        sub = (by.get(key) or {}).get("tp", {})
        if isinstance(sub, dict) and isinstance(sub.get(cls), dict):
            out.update({"tp_of": key, **{f"tp_{k}": v for k, v in sub[cls].items()}})
            break
    return out
