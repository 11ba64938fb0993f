"""The acceptance-curves file: its types, writer, reader and version handling.

Role: the one format between the engine (`specbed engine curves`, `specbed fidelity` write it through
`save_curves`) and the simulator (`sim.acceptance`, `sim.empirical` read it through `load_curves`); nothing
else parses these files. Built-in curves live in `specsched.contracts.builtin_curves`, domain names and the
engine's "prose" = simulator's "chat" in `specsched.contracts.domains`.

JSON curves file (version 2; version 1 = the same without "samples", still read; any other version is
refused naming the field). Unknown keys are errors; every number must be finite; curves and confidences lie
in [0, 1]:
    {
      "version": 2,
      "description": "free text (optional)",
      "curves": {                                  # drafter -> domain -> conditional acceptance per position
        "dspark": {"math": [0.905, ...], "code": [...], "chat": [...]},  # any non-empty subset of the
        "ngram": {"chat": [0.62, 0.71, ...]}                             # domains; length >= 1
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
Drafter names: any name (letters, digits, `_ . + -`; not "none"): the built-ins of DRAFTERS or any other
drafter (n-gram, suffix, a team's own); the simulator prices an unknown name by its `drafter.kind`. A
built-in drafter absent from the file, or a domain the file does not give it, keeps its built-in curve;
another drafter has exactly the domains the file gives it (`Curves.get` refuses the others, naming the
field). Samples need a curve for every domain.

May import: numpy, the standard library, `specsched.io.errors`, `specsched.contracts.domains`,
`specsched.contracts.builtin_curves`, `specsched.io.safeio`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specsched.contracts.builtin_curves import DRAFTERS, builtin_curve, check_domain, check_drafter
from specsched.contracts.domains import DOMAINS
from specsched.io import inputs, safeio
from specsched.io.errors import InputError
from specsched.io.results import dumps_json

CURVES_VERSION = 2
_READABLE_VERSIONS = (1, 2)
CONFIDENCE_KEYS = ("ece_raw", "auc_raw", "ece_calibrated", "auc_calibrated", "temperatures")
MAX_SAMPLES = 4096  # rows per (drafter, domain) a writer keeps by default: files stay a few MB
DRAFTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]*")  # a drafter key of a curves file


def clipped(values, lo: float = 0.0, hi: float = 1.0) -> tuple[float, ...] | None:
    """The writer's side: measured values clipped into [lo, hi], or None when any is missing or not finite
    (a statistic undefined at some position, e.g. AUC with one class, is left out of the file)."""
    out = []
    for v in values:
        if v is None or not math.isfinite(v):
            return None
        out.append(min(max(float(v), lo), hi))
    return tuple(out)


@dataclass(frozen=True)
class Samples:
    """Engine request-steps of one (drafter, domain), every draft verified: `conf: float64[N, γ]` (what the
    policy saw), `accepted: int64[N]` (0..γ), `group: int64[N]` (engine request id: steps of one request),
    optional `position: int64[N]` (tokens the request had emitted before that step)."""

    conf: np.ndarray
    accepted: np.ndarray
    group: np.ndarray
    position: np.ndarray | None = None

    @classmethod
    def measured(cls, conf, accepted, group, position=None, max_samples: int = MAX_SAMPLES) -> Samples:
        """The writer's side: measured rows (`conf` float[N, γ], `accepted` int[N], `group` int[N], optional
        `position` int[N]) evenly thinned to at most `max_samples` rows (first and last kept), confidences
        clipped into [0, 1]."""
        n = len(accepted)
        keep = (
            np.arange(n)
            if n <= max_samples
            else np.array(sorted({round(i * (n - 1) / (max_samples - 1)) for i in range(max_samples)}))
        )
        return cls(
            np.clip(np.asarray(conf, dtype=np.float64)[keep], 0.0, 1.0),
            np.asarray(accepted, dtype=np.int64)[keep],
            np.asarray(group, dtype=np.int64)[keep],
            None if position is None else np.asarray(position, dtype=np.int64)[keep],
        )

    def to_json(self) -> dict[str, Any]:
        """The file's "samples" object of one domain (confidences rounded to 6 decimals)."""
        out = {
            "conf": [[round(float(x), 6) for x in row] for row in self.conf],
            "accepted": [int(a) for a in self.accepted],
            "group": [int(g) for g in self.group],
        }
        if self.position is not None:
            out["position"] = [int(p) for p in self.position]
        return out


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

    def has(self, drafter: str, domain: str) -> bool:
        """Whether `get(drafter, domain)` has a curve: the file's, or a built-in drafter's."""
        return domain in self.curves.get(drafter, {}) or (drafter in DRAFTERS and domain in DOMAINS)

    def get(self, drafter: str, domain: str) -> np.ndarray:
        """Conditional acceptance `float64[γ]` for (drafter, domain): the file's, else the built-in."""
        check_domain(domain)
        if domain in self.curves.get(drafter, {}):
            return np.array(self.curves[drafter][domain], dtype=np.float64)
        if drafter in self.curves and drafter not in DRAFTERS:
            raise InputError(
                f"drafter {drafter!r} has no {domain} curve in this file (it has "
                f"{', '.join(self.curves[drafter])})",
                file=self.source,
                field=f"curves.{drafter}.{domain}",
            )
        self._check_name(drafter)
        return builtin_curve(drafter, domain)

    def _check_name(self, drafter: str) -> None:
        if drafter not in DRAFTERS and drafter not in self.curves:
            known = ", ".join(dict.fromkeys([*DRAFTERS, *self.curves]))
            raise InputError(
                f"unknown drafter {drafter!r}: neither built in nor in curves file {self.source} "
                f"(known: {known})",
                field="drafter.name",
            )

    def confidence_stats(self, drafter: str, domain: str) -> dict[str, np.ndarray] | None:
        """Measured confidence stats (keys from CONFIDENCE_KEYS, `float64[γ]` each), or None if absent."""
        stats = self.confidence.get(drafter, {}).get(domain)
        if stats is None:
            return None
        return {k: np.array(v, dtype=np.float64) for k, v in stats.items()}

    def samples_for(self, drafter: str) -> dict[str, Samples] | None:
        """Measured request-step samples of `drafter` by domain (all of DOMAINS), or None if absent."""
        self._check_name(drafter)
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
    """Write `curves` as a JSON curves file (its `version`), checked first by the reader: a writer can never
    produce a file that `load_curves` refuses."""
    doc = curves.to_json()
    parse_curves(doc, str(path))
    safeio.write_text(path, dumps_json(doc, indent=1, sort_keys=False))  # atomic: a full disk keeps the old


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
    if name == "none" or DRAFTER_NAME.fullmatch(name) is None:
        raise InputError(
            f"bad drafter name {name!r} (letters, digits, _ . + -; not 'none')", file=file, field=where
        )


def _check_domain_keys(per: dict, where: str, file: str, require_all: bool) -> None:
    for dom in per:
        if dom not in DOMAINS:
            raise InputError(
                f"unknown domain (expected {', '.join(DOMAINS)})", file=file, field=f"{where}.{dom}"
            )
    for dom in DOMAINS if require_all else ():
        if dom not in per:
            raise InputError("missing domain", file=file, field=f"{where}.{dom}")


def _check_version(doc: dict, file: str) -> int:
    if "version" not in doc:
        raise InputError(f"missing (expected {CURVES_VERSION})", file=file, field="version")
    version = doc["version"]
    if isinstance(version, bool) or version not in _READABLE_VERSIONS:
        readable = " or ".join(map(str, _READABLE_VERSIONS))
        raise InputError(f"unsupported version {version!r} (expected {readable})", file=file, field="version")
    if version < 2 and "samples" in doc:
        raise InputError("samples need a version-2 curves file", file=file, field="samples")
    return version


def parse_curves(doc: Any, file: str = "<curves>") -> Curves:
    """Validate a decoded JSON document (see module docstring) into `Curves`; errors name `file` and field."""
    doc = _obj(doc, "<top level>", file)
    for key in doc:
        if key not in ("version", "description", "curves", "confidence", "samples"):
            raise InputError("unknown key", file=file, field=key)
    version = _check_version(doc, file)
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise InputError("expected a string", file=file, field="description")
    if "curves" not in doc:
        raise InputError("missing", file=file, field="curves")
    curves: dict[str, dict[str, tuple[float, ...]]] = {}
    for drafter, per in _obj(doc["curves"], "curves", file).items():
        where = f"curves.{drafter}"
        _drafter_key(drafter, where, file)
        per = _obj(per, where, file)
        _check_domain_keys(per, where, file, require_all=False)
        if not per:
            raise InputError("no domain: give at least one curve", file=file, field=where)
        curves[drafter] = {
            dom: _numbers(per[dom], f"{where}.{dom}", file, 0.0, 1.0) for dom in DOMAINS if dom in per
        }
    confidence, samples = {}, {}
    for key, parse_one, out in (("confidence", _confidence, confidence), ("samples", _samples, samples)):
        for drafter, per in _obj(doc.get(key, {}), key, file).items():
            where = f"{key}.{drafter}"
            _drafter_key(drafter, where, file)
            if drafter not in curves:
                what = "confidence stats" if key == "confidence" else "samples"
                raise InputError(f"{what} for a drafter without a curve in this file", file=file, field=where)
            per = _obj(per, where, file)
            _check_domain_keys(per, where, file, require_all=key == "samples")
            for dom in per:
                if dom not in curves[drafter]:
                    msg = f"no {dom} curve for {drafter} in this file"
                    raise InputError(msg, file=file, field=f"curves.{drafter}.{dom}")
            out[drafter] = {
                dom: parse_one(v, f"{where}.{dom}", file, len(curves[drafter][dom])) for dom, v in per.items()
            }
    return Curves(curves, confidence, samples, description, source=file, version=version)


def _confidence(value: Any, where: str, file: str, gamma: int) -> dict[str, tuple[float, ...]]:
    """One domain's confidence stats: keys from CONFIDENCE_KEYS, `gamma` values each (temperatures > 0)."""
    parsed = {}
    for key, val in _obj(value, where, file).items():
        f = f"{where}.{key}"
        if key not in CONFIDENCE_KEYS:
            raise InputError(f"unknown key (expected {', '.join(CONFIDENCE_KEYS)})", file=file, field=f)
        temps = key == "temperatures"
        parsed[key] = _numbers(val, f, file, None if temps else 0.0, None if temps else 1.0, pos=temps)
        if len(parsed[key]) != gamma:
            raise InputError(f"has {len(parsed[key])} values but the curve has {gamma}", file=file, field=f)
    return parsed


def _ints(value: Any, where: str, file: str, lo: int, hi: int | None) -> np.ndarray:
    if not isinstance(value, list) or not value:
        raise InputError("expected a non-empty list of integers", file=file, field=where)
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, int) or x < lo or (hi is not None and x > hi):
            span = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
            raise InputError(f"expected an integer {span}, got {x!r}", file=file, field=f"{where}[{i}]")
    return np.array(value, dtype=np.int64)


def _samples(value: Any, where: str, file: str, gamma: int) -> Samples:
    """One domain's samples: conf rows of `gamma` values in [0, 1], accepted in 0..γ, group ids >= 0,
    optional positions >= 0."""
    obj = _obj(value, where, file)
    for key in obj:
        if key not in ("conf", "accepted", "group", "position"):
            raise InputError(
                "unknown key (expected conf, accepted, group, position)", file=file, field=f"{where}.{key}"
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
    position = _ints(obj["position"], f"{where}.position", file, 0, None) if "position" in obj else None
    for key, arr in (("accepted", accepted), ("group", group), ("position", position)):
        if arr is not None and arr.size != conf.shape[0]:
            raise InputError(
                f"has {arr.size} values but conf has {conf.shape[0]} rows", file=file, field=f"{where}.{key}"
            )
    return Samples(conf, accepted, group, position)


def load_curves(path: str | Path) -> Curves:
    """Read and validate a JSON curves file; any problem raises `InputError` naming the file and field."""
    file = str(path)
    doc = inputs.load_json(path, what="curves file")  # regular file, size cap, digit/depth/finite limits
    with inputs.reading(file):
        return parse_curves(doc, file)


def curve_matrix(
    curves: Curves | None, drafter: str, gamma: int, domains: tuple[str, ...] = DOMAINS
) -> np.ndarray:
    """`float64[3, γ]`: the first γ positions of each domain's curve, rows in DOMAINS order.

    `curves=None` uses the built-ins. `domains`: those that must have a curve (the workload's); a row of
    another domain without one is a copy of the first row that has one (never drawn: no request of that
    domain). γ longer than a curve raises `InputError` (a ValueError) naming `drafter.gamma` (and the
    curves file, if any).
    """
    if curves is None:
        check_drafter(drafter)
    if isinstance(gamma, bool) or not isinstance(gamma, int | np.integer) or gamma < 0:
        raise InputError(f"must be an integer >= 0, got {gamma!r}", field="drafter.gamma")
    got = {
        d: builtin_curve(drafter, d) if curves is None else curves.get(drafter, d)
        for d in DOMAINS
        if d in domains or curves is None or curves.has(drafter, d)
    }
    rows = [got.get(d, next(iter(got.values()))) for d in DOMAINS]
    shortest = min(len(r) for r in rows)
    if gamma > shortest:
        src = None if curves is None or drafter not in curves.curves else curves.source
        raise InputError(
            f"gamma {gamma} exceeds the {drafter} acceptance curve length {shortest}",
            file=src,
            field="drafter.gamma",
        )
    return np.stack([r[:gamma] for r in rows]).astype(np.float64)
