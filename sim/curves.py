"""Per-position conditional acceptance curves: built-ins from the paper and a versioned JSON file format.

Role: the population-level input of the acceptance model (`sim.acceptance`). A curve `float64[γ]` holds,
for draft positions k = 1..γ, the CONDITIONAL probability that draft k is accepted given drafts 1..k-1 were
(the paper's Fig. 2); prefix survival is the cumulative product, and τ = 1 + Σ survival when all γ are
verified.

May import: numpy, the standard library, `specsched.errors`.

Built-ins
- dspark / dflash / eagle3 × math / code / chat: Fig. 2 of the DSpark paper (Qwen3-4B, temperature 1, chain
  drafting, γ = 7), values read off the plot (±0.01; ../shared/research/dspark.md §4.2). With all 7 verified
  they give τ within 0.05 of the paper's Table 1 domain means (dspark.md §6 T1; DSpark/code is the tightest:
  5.166 vs 5.12).
- mtp: MTP-1, ONE position. Source: DeepSeek-V3 technical report (arXiv 2412.19437 §5.4.3): "the acceptance
  rate of the second token prediction ranges between 85% and 90% across various generation topics".
  ASSUMPTION (ours): math 0.90, code 0.88, chat 0.85, ordered like every drafter in Fig. 2.
- none: no drafts, an empty curve.

JSON curves file (version 2; version 1 = the same without "samples"). Unknown keys are errors; every
number must be finite; curves and confidences lie in [0, 1]:
    {
      "version": 2,
      "description": "free text (optional)",
      "curves": {                                  # drafter -> domain -> conditional acceptance per position
        "dspark": {"math": [0.905, ...], "code": [...], "chat": [...]}   # all three domains, length >= 1
      },
      "confidence": {                              # optional, measured by the real engine
        "dspark": {"math": {"ece_raw": [...], "auc_raw": [...], "ece_calibrated": [...],
                            "auc_calibrated": [...], "temperatures": [...]}}   # each key optional,
      },                                           # one value per position of that curve
      "samples": {                                 # optional: engine request-steps, all γ drafts verified
        "dspark": {"math": {"conf": [[0.93, ...], ...],   # N rows of γ: the confidences the policy saw
                            "accepted": [3, ...],          # N accepted drafts (0..γ) of those steps
                            "group": [0, ...]}}            # N engine request ids (ints >= 0)
      }                                            # all three domains; drives acceptance.model "empirical"
    }
Drafters are those of DRAFTERS except "none"; a drafter absent from the file keeps its built-in curve.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specsched.errors import InputError

DRAFTERS = ("none", "mtp", "eagle3", "dflash", "dspark")
DOMAINS = ("chat", "math", "code")
CURVES_VERSION = 2
_READABLE_VERSIONS = (1, 2)
CONFIDENCE_KEYS = ("ece_raw", "auc_raw", "ece_calibrated", "auc_calibrated", "temperatures")

_FIG2: dict[str, dict[str, tuple[float, ...]]] = {
    "dflash": {
        "math": (0.885, 0.826, 0.820, 0.834, 0.841, 0.839, 0.828),
        "code": (0.865, 0.815, 0.797, 0.800, 0.809, 0.800, 0.777),
        "chat": (0.718, 0.648, 0.638, 0.660, 0.683, 0.692, 0.688),
    },
    "eagle3": {
        "math": (0.810, 0.823, 0.838, 0.844, 0.850, 0.855, 0.850),
        "code": (0.771, 0.774, 0.781, 0.791, 0.787, 0.794, 0.784),
        "chat": (0.533, 0.589, 0.642, 0.679, 0.709, 0.730, 0.733),
    },
    "dspark": {
        "math": (0.905, 0.890, 0.888, 0.886, 0.887, 0.890, 0.883),
        "code": (0.886, 0.872, 0.860, 0.861, 0.858, 0.859, 0.851),
        "chat": (0.736, 0.738, 0.740, 0.745, 0.759, 0.766, 0.761),
    },
    "mtp": {"math": (0.90,), "code": (0.88,), "chat": (0.85,)},
    "none": {"math": (), "code": (), "chat": ()},
}

# Paper Table 1, Qwen3-4B domain means (dspark.md §6 T1): the check target for the built-in curves.
TABLE1_TAU: dict[str, dict[str, float]] = {
    "dspark": {"math": 5.57, "code": 5.12, "chat": 3.49},
    "dflash": {"math": 4.80, "code": 4.44, "chat": 2.95},
    "eagle3": {"math": 4.56, "code": 3.87, "chat": 2.40},
}


def _check_drafter(drafter: str) -> None:
    if drafter not in DRAFTERS:
        raise InputError(
            f"unknown drafter {drafter!r} (expected one of {', '.join(DRAFTERS)})", field="drafter.name"
        )


def _check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise InputError(f"unknown domain {domain!r} (expected one of {', '.join(DOMAINS)})", field="domain")


def builtin_curve(drafter: str, domain: str) -> np.ndarray:
    """Built-in conditional acceptance curve `float64[γ_max]` (γ_max: 7, mtp 1, none 0); a fresh copy."""
    _check_drafter(drafter)
    _check_domain(domain)
    return np.array(_FIG2[drafter][domain], dtype=np.float64)


def curve_tau(curve: np.ndarray) -> float:
    """τ = 1 + Σ_k Π_{i≤k} c_i: mean tokens per step when every position of `curve` is verified."""
    return float(1.0 + np.cumprod(np.asarray(curve, dtype=np.float64)).sum())


@dataclass(frozen=True)
class Samples:
    """Engine request-steps of one (drafter, domain), every draft verified: `conf: float64[N, γ]` (what the
    policy saw), `accepted: int64[N]` (0..γ), `group: int64[N]` (engine request id: steps of one request)."""

    conf: np.ndarray
    accepted: np.ndarray
    group: np.ndarray

    def to_json(self) -> dict[str, Any]:
        return {
            "conf": [[round(float(x), 6) for x in row] for row in self.conf],
            "accepted": [int(a) for a in self.accepted],
            "group": [int(g) for g in self.group],
        }


@dataclass(frozen=True)
class Curves:
    """Curves loaded from a file (`source`); drafters absent from it fall back to the built-ins.

    `curves[drafter][domain]` and `confidence[drafter][domain][key]` hold tuples of floats.
    """

    curves: dict[str, dict[str, tuple[float, ...]]]
    confidence: dict[str, dict[str, dict[str, tuple[float, ...]]]] = field(default_factory=dict)
    samples: dict[str, dict[str, Samples]] = field(default_factory=dict, compare=False)
    description: str = ""
    source: str | None = field(default=None, compare=False)
    version: int = CURVES_VERSION

    def get(self, drafter: str, domain: str) -> np.ndarray:
        """Conditional acceptance `float64[γ]` for (drafter, domain): the file's, else the built-in."""
        _check_drafter(drafter)
        _check_domain(domain)
        if drafter in self.curves:
            return np.array(self.curves[drafter][domain], dtype=np.float64)
        return builtin_curve(drafter, domain)

    def confidence_stats(self, drafter: str, domain: str) -> dict[str, np.ndarray] | None:
        """Measured confidence stats (keys from CONFIDENCE_KEYS, `float64[γ]` each), or None if absent."""
        stats = self.confidence.get(drafter, {}).get(domain)
        if stats is None:
            return None
        return {k: np.array(v, dtype=np.float64) for k, v in stats.items()}

    def samples_for(self, drafter: str) -> dict[str, Samples] | None:
        """Measured request-step samples of `drafter` by domain (all of DOMAINS), or None if absent."""
        _check_drafter(drafter)
        return self.samples.get(drafter)

    def to_json(self) -> dict[str, Any]:
        """The JSON document that `load_curves` reads back to an equal `Curves`."""
        doc: dict[str, Any] = {"version": self.version}
        if self.description:
            doc["description"] = self.description
        doc["curves"] = {d: {dom: list(v) for dom, v in per.items()} for d, per in self.curves.items()}
        if self.confidence:
            doc["confidence"] = {
                d: {dom: {k: list(v) for k, v in st.items()} for dom, st in per.items()}
                for d, per in self.confidence.items()
            }
        if self.samples:
            doc["samples"] = {
                d: {dom: s.to_json() for dom, s in per.items()} for d, per in self.samples.items()
            }
        return doc


def save_curves(curves: Curves, path: str | Path) -> None:
    """Write `curves` as a JSON curves file (its `version`)."""
    Path(path).write_text(json.dumps(curves.to_json(), indent=2) + "\n")


def _numbers(value: Any, where: str, file: str, lo: float | None, hi: float | None, pos: bool = False):
    if not isinstance(value, list) or not value:
        raise InputError("expected a non-empty list of numbers", file=file, field=where)
    out = []
    for i, x in enumerate(value):
        f = f"{where}[{i}]"
        if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
            raise InputError(f"expected a finite number, got {x!r}", file=file, field=f)
        if (lo is not None and x < lo) or (hi is not None and x > hi) or (pos and x <= 0):
            rng = "> 0" if pos else f"in [{lo}, {hi}]"
            raise InputError(f"value {x!r} is not {rng}", file=file, field=f)
        out.append(float(x))
    return tuple(out)


def _obj(value: Any, where: str, file: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"expected a JSON object, got {type(value).__name__}", file=file, field=where)
    return value


def _drafter_key(name: str, where: str, file: str) -> None:
    if name not in DRAFTERS or name == "none":
        valid = ", ".join(d for d in DRAFTERS if d != "none")
        raise InputError(f"unknown drafter {name!r} (expected one of {valid})", file=file, field=where)


def parse_curves(doc: Any, file: str = "<curves>") -> Curves:
    """Validate a decoded JSON document (see module docstring) into `Curves`; errors name `file` and field."""
    doc = _obj(doc, "<top level>", file)
    for key in doc:
        if key not in ("version", "description", "curves", "confidence", "samples"):
            raise InputError("unknown key", file=file, field=key)
    if "version" not in doc:
        raise InputError(f"missing (expected {CURVES_VERSION})", file=file, field="version")
    version = doc["version"]
    if isinstance(version, bool) or version not in _READABLE_VERSIONS:
        readable = " or ".join(map(str, _READABLE_VERSIONS))
        raise InputError(f"unsupported version {version!r} (expected {readable})", file=file, field="version")
    if version < 2 and "samples" in doc:
        raise InputError("samples need a version-2 curves file", file=file, field="samples")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise InputError("expected a string", file=file, field="description")
    if "curves" not in doc:
        raise InputError("missing", file=file, field="curves")
    curves: dict[str, dict[str, tuple[float, ...]]] = {}
    for drafter, per in _obj(doc["curves"], "curves", file).items():
        _drafter_key(drafter, f"curves.{drafter}", file)
        per = _obj(per, f"curves.{drafter}", file)
        for dom in per:
            if dom not in DOMAINS:
                raise InputError(
                    f"unknown domain (expected {', '.join(DOMAINS)})",
                    file=file,
                    field=f"curves.{drafter}.{dom}",
                )
        curves[drafter] = {}
        for dom in DOMAINS:
            if dom not in per:
                raise InputError("missing domain", file=file, field=f"curves.{drafter}.{dom}")
            curves[drafter][dom] = _numbers(per[dom], f"curves.{drafter}.{dom}", file, 0.0, 1.0)
    confidence: dict[str, dict[str, dict[str, tuple[float, ...]]]] = {}
    for drafter, per in _obj(doc.get("confidence", {}), "confidence", file).items():
        where = f"confidence.{drafter}"
        _drafter_key(drafter, where, file)
        if drafter not in curves:
            raise InputError(
                "confidence stats for a drafter without a curve in this file", file=file, field=where
            )
        confidence[drafter] = {}
        for dom, stats in _obj(per, where, file).items():
            if dom not in DOMAINS:
                raise InputError(
                    f"unknown domain (expected {', '.join(DOMAINS)})", file=file, field=f"{where}.{dom}"
                )
            gamma = len(curves[drafter][dom])
            parsed = {}
            for key, val in _obj(stats, f"{where}.{dom}", file).items():
                f = f"{where}.{dom}.{key}"
                if key not in CONFIDENCE_KEYS:
                    raise InputError(
                        f"unknown key (expected {', '.join(CONFIDENCE_KEYS)})", file=file, field=f
                    )
                temps = key == "temperatures"
                parsed[key] = _numbers(
                    val, f, file, None if temps else 0.0, None if temps else 1.0, pos=temps
                )
                if len(parsed[key]) != gamma:
                    raise InputError(
                        f"has {len(parsed[key])} values but the curve has {gamma}", file=file, field=f
                    )
            confidence[drafter][dom] = parsed
    samples = {}
    for drafter, per in _obj(doc.get("samples", {}), "samples", file).items():
        where = f"samples.{drafter}"
        _drafter_key(drafter, where, file)
        if drafter not in curves:
            raise InputError("samples for a drafter without a curve in this file", file=file, field=where)
        per = _obj(per, where, file)
        for dom in per:
            if dom not in DOMAINS:
                raise InputError(
                    f"unknown domain (expected {', '.join(DOMAINS)})", file=file, field=f"{where}.{dom}"
                )
        samples[drafter] = {}
        for dom in DOMAINS:
            if dom not in per:
                raise InputError("missing domain", file=file, field=f"{where}.{dom}")
            samples[drafter][dom] = _samples(per[dom], f"{where}.{dom}", file, len(curves[drafter][dom]))
    return Curves(
        curves=curves,
        confidence=confidence,
        samples=samples,
        description=description,
        source=file,
        version=version,
    )


def _ints(value: Any, where: str, file: str, lo: int, hi: int | None) -> np.ndarray:
    if not isinstance(value, list) or not value:
        raise InputError("expected a non-empty list of integers", file=file, field=where)
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, int) or x < lo or (hi is not None and x > hi):
            span = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
            raise InputError(f"expected an integer {span}, got {x!r}", file=file, field=f"{where}[{i}]")
    return np.array(value, dtype=np.int64)


def _samples(value: Any, where: str, file: str, gamma: int) -> Samples:
    """One domain's samples: conf rows of `gamma` values in [0, 1], accepted in 0..γ, group ids >= 0."""
    obj = _obj(value, where, file)
    for key in obj:
        if key not in ("conf", "accepted", "group"):
            raise InputError(
                "unknown key (expected conf, accepted, group)", file=file, field=f"{where}.{key}"
            )
    for key in ("conf", "accepted", "group"):
        if key not in obj:
            raise InputError("missing", file=file, field=f"{where}.{key}")
    rows = obj["conf"]
    if not isinstance(rows, list) or not rows:
        raise InputError("expected a non-empty list of rows", file=file, field=f"{where}.conf")
    conf = np.empty((len(rows), gamma), dtype=np.float64)
    for i, row in enumerate(rows):
        f = f"{where}.conf[{i}]"
        vals = _numbers(row, f, file, 0.0, 1.0)
        if len(vals) != gamma:
            raise InputError(f"has {len(vals)} values but the curve has {gamma}", file=file, field=f)
        conf[i] = vals
    accepted = _ints(obj["accepted"], f"{where}.accepted", file, 0, gamma)
    group = _ints(obj["group"], f"{where}.group", file, 0, None)
    for key, arr in (("accepted", accepted), ("group", group)):
        if arr.size != conf.shape[0]:
            raise InputError(
                f"has {arr.size} values but conf has {conf.shape[0]} rows", file=file, field=f"{where}.{key}"
            )
    return Samples(conf, accepted, group)


def load_curves(path: str | Path) -> Curves:
    """Read and validate a JSON curves file; any problem raises `InputError` naming the file and field."""
    file = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise InputError(f"cannot read curves file: {e.strerror or e}", file=file) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON: {e.msg}", file=file, line=e.lineno) from None
    return parse_curves(doc, file)


def curve_matrix(curves: Curves | None, drafter: str, gamma: int) -> np.ndarray:
    """`float64[3, γ]`: the first γ positions of each domain's curve, rows in DOMAINS order.

    `curves=None` uses the built-ins. γ longer than a curve raises `InputError` (a ValueError) naming
    `drafter.gamma` (and the curves file, if any).
    """
    _check_drafter(drafter)
    if isinstance(gamma, bool) or not isinstance(gamma, int | np.integer) or gamma < 0:
        raise InputError(f"must be an integer >= 0, got {gamma!r}", field="drafter.gamma")
    rows = [builtin_curve(drafter, d) if curves is None else curves.get(drafter, d) for d in DOMAINS]
    shortest = min(len(r) for r in rows)
    if gamma > shortest:
        src = None if curves is None or drafter not in curves.curves else curves.source
        raise InputError(
            f"gamma {gamma} exceeds the {drafter} acceptance curve length {shortest}",
            file=src,
            field="drafter.gamma",
        )
    return np.stack([r[:gamma] for r in rows]).astype(np.float64)
