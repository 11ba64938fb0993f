"""The one set of physical knobs every price reads: defaults, bounds, the shipped calibration, the transfer.

Role: `Knobs` is what the roofline (`specsched.price.roofline`), the vLLM step (`specsched.price.vllm`),
an expert-parallel group (`specsched.price.ep`), a drafter priced from its shape
(`specsched.price.draft_shape`) and the cost fit (`specsched.fit`, which starts from `FIT_START`) take
their efficiencies and fixed costs from. Each knob has one default and one range (`BOUNDS`), checked by one
function (`check_knob`) wherever a knob enters.

    eta_bw, eta_f, eta_kv, eta_attn   achieved fractions of the GPU's HBM bandwidth (weights), dense tensor
                                      peak (linear layers), HBM bandwidth for attention's KV reads, and
                                      tensor peak for attention's FLOPs (expert-parallel groups)
    c0                                fixed seconds per layer (launches, norms, small ops)
    c_moe, c_token, c_vocab           per MoE layer; per sampled row a layer, while memory-bound (logits and
                                      sampler rows, per-sequence set-up; `specsched.price.vllm.token_units`,
                                      the shipped "row" form); per vocabulary entry per wave of sampled rows
    step_s, request_s, frontend_s     per step on the host; per running request per step; per request
                                      in the API server (added to TTFT and end-to-end by the callers)
    link_latency                      seconds per all-reduce step (None: the GPU's own link, `GPUS`)

Defaults are datasheet-style first-order figures: fits to published H100 profiles land within ~5–10 %
MAPE with η_bw ≈ 0.9, η_f ≈ 0.5–0.65, c0 ≈ 35–60 µs (simulators.md §4).

The shipped calibration (`specsched/data/vllm_knobs.json`, written by `specbed cost calibrate`) holds the
knobs fitted per GPU on measured vLLM runs; `shipped_knobs(gpu)` reads it through `specsched.io.inputs` (a
malformed file is one error line, never a silent fallback). A GPU without measured runs gets a calibrated
GPU's knobs carried over by `transferred_knobs` — the ONE place that rule lives (swap it there).

May import: the standard library, `specsched.io.errors`, `specsched.io.inputs`, `specsched.price.gpus`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.price.gpus import get_gpu

_FRACTION = (0.0, 1.0, True, False)  # (0, 1]
_SECONDS = (0.0, 10.0, False, True)  # [0, 10)
#: name -> (lowest, highest, lowest excluded, highest excluded): every knob's range
BOUNDS: dict[str, tuple[float, float, bool, bool]] = {
    **{name: _FRACTION for name in ("eta_bw", "eta_f", "eta_kv", "eta_attn")},
    **{name: _SECONDS for name in ("c0", "c_moe", "c_token", "c_vocab", "step_s", "frontend_s", "request_s",
                                   "link_latency")},
}  # fmt: skip


def check_knob(name: str, value, *, where: str = "knobs") -> None:
    """InputError naming `where.name` unless `value` is a number in the knob's range (`BOUNDS`)."""
    lo, hi, lo_open, hi_open = BOUNDS[name]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    inside = number and (lo < value if lo_open else lo <= value) and (value < hi if hi_open else value <= hi)
    if not inside:
        span = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise InputError(f"must be in {span}, got {value!r}", field=f"{where}.{name}")


@dataclass(frozen=True)
class Knobs:
    """The physical knobs of one GPU (module docstring); the defaults are the datasheet-style ones."""

    eta_bw: float = 0.9
    eta_f: float = 0.6
    eta_kv: float = 0.9
    c0: float = 40e-6
    c_moe: float = 0.0
    c_token: float = 0.0  # per token unit while memory-bound (vllm.token_units: a sampled row a layer)
    c_vocab: float = 0.0  # per vocabulary entry a step (a wave of rows), with filtered default sampling
    step_s: float = 0.0
    link_latency: float | None = None  # None: the GPU's own link
    frontend_s: float = 0.0
    request_s: float = 0.0
    eta_attn: float = 0.6

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None or f.name != "link_latency":
                check_knob(f.name, value)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict, *, file: str | None = None) -> Knobs:
        return knobs_from_dict(cls, raw, file=file)


def knobs_from_dict(cls, raw, *, file: str | None = None):
    """A frozen dataclass of knobs (`Knobs`, `specsched.spec_knobs.SpecKnobs`) from a mapping read from
    `file`: an unknown name or a value out of its bounds is one InputError naming the file and the knob."""
    if not isinstance(raw, dict):
        raise InputError("expected an object of knobs", file=file, field="knobs")
    names = {f.name for f in fields(cls)}
    extra = sorted(set(raw) - names)
    if extra:
        raise InputError(f"unknown knob {extra[0]!r} (knobs: {', '.join(sorted(names))})", file=file)
    try:
        return cls(**raw)
    except InputError as err:
        raise InputError(err.message, file=file, field=err.field) from None


#: the defaults, as one object
DEFAULTS = Knobs()

#: where `specsched.fit` starts its search (a second start is derived from this one there): the
#: defaults' c0, a lower bandwidth and compute efficiency and a slower link than the datasheet's, so the
#: fit approaches measured profiles from the pessimistic side
FIT_START = {
    "c0": DEFAULTS.c0, "eta_bw": 0.8, "eta_f": 0.5, "link_bw": 100e9, "hop_latency": 2e-6, "eager_s": 1e-5
}  # fmt: skip

#: calibrated knobs per GPU (`specbed cost calibrate`), with their provenance
KNOBS_FILE = Path(__file__).resolve().parent.parent / "data" / "vllm_knobs.json"


def shipped_knobs(gpu: str) -> Knobs:
    """The catalogue's knobs for `gpu`: calibrated on measured runs where the knobs file has them; else
    those of the calibrated GPU the file's `transfer.from` names, carried over by `transferred_knobs`.
    InputError naming the file if it is unreadable or malformed."""
    file = str(KNOBS_FILE)
    raw = inputs.mapping(inputs.load_json(KNOBS_FILE, what="knobs file"), file=file)
    table = inputs.mapping(raw.get("gpus"), file=file, field="gpus")
    key = get_gpu(gpu).key
    if key in table:
        return _entry(table, key, file)
    source = inputs.mapping(raw.get("transfer") or {}, file=file, field="transfer").get("from")
    if source not in table:
        raise InputError(f"names no calibrated GPU to carry knobs from ({source!r})", file=file,
                         field="transfer.from")  # fmt: skip
    from specsched.kernels import carry_dataclass  # lazy: the kernel figures read this catalogue

    # The GPU rule from measured vLLM kernels (issue 33; `transferred_knobs` is its `rule="clock"`).
    return carry_dataclass(_entry(table, source, file), source, key)


def _entry(table: dict, key: str, file: str) -> Knobs:
    entry = inputs.mapping(table[key], file=file, field=f"gpus.{key}")
    knobs = inputs.mapping(entry.get("knobs"), file=file, field=f"gpus.{key}.knobs")
    return Knobs.from_dict(knobs, file=file)


def transferred_knobs(knobs: Knobs, source: str, target: str) -> Knobs:
    """`knobs` calibrated on GPU `source`, carried to GPU `target` that has no measured runs (the rule,
    and its check on a public two-GPU step table: docs/validation.md, "GPUs without measured runs"):

    - eta_bw, eta_kv, eta_f, eta_attn unchanged: dimensionless fractions of the target's own datasheet
      bandwidth and throughput, reached by the same kernels;
    - c0, c_moe, c_token, c_vocab × clock(source) / clock(target): fixed per-kernel GPU work (launch,
      drain, latency-bound small kernels, the sampler's passes) runs at the SM clock;
    - link_latency × max(that clock ratio, link latency ratio): an all-reduce is a kernel too, and no
      faster than the target's own link (PCIe on an L40S);
    - step_s, frontend_s, request_s unchanged: host-side (scheduler, API server)."""
    src, dst = get_gpu(source), get_gpu(target)
    if src.sm_clock is None or dst.sm_clock is None:
        missing = src.key if src.sm_clock is None else dst.key
        raise InputError(
            f"carrying calibrated knobs needs GPU {missing!r}'s SM clock, which the table "
            "does not have: calibrate that GPU (`specbed cost calibrate`)",
            field="cost.gpu",
        )
    clock = src.sm_clock / dst.sm_clock
    link = None
    if knobs.link_latency is not None:
        link = knobs.link_latency * max(clock, dst.link_latency / src.link_latency)
    return replace(
        knobs,
        c0=knobs.c0 * clock,
        c_moe=knobs.c_moe * clock,
        c_token=knobs.c_token * clock,
        c_vocab=knobs.c_vocab * clock,
        link_latency=link,
    )
