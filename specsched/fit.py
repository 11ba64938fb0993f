"""Fit the roofline's physical knobs to measured steps, predict steps with them, and the FIT.json file.

Role: ground `specsched.hardware.step_seconds` in measurements. A fit keeps the roofline's formula and
fits five bounded knobs, shared across TP degrees (so a fit on TP 2 and 4 predicts TP 8, and the same knobs
with another GPU's or model's specs predict that GPU or model):

    c0           per-layer fixed time (launches, norms, small kernels), seconds      (0, 5 ms]
    eta_bw       achieved fraction of HBM bandwidth                                   (0, 1]
    eta_f        achieved fraction of dense tensor throughput                         (0, 1]
    link_bw      effective bandwidth of the TP all-reduces, bytes/s                   [1 GB/s, 10 TB/s]
    hop_latency  latency per extra GPU in each collective, seconds                    [0, 1 ms]
    request_s    per running request per step (sampling, bookkeeping), seconds        [0, 20 µs]
                 — not fitted (0): it has no physical work of its own beyond the KV reads; a fit file
                 may set one within the bound

A point with `tokens` query tokens, `requests` requests and `context` KV tokens read takes

    step_seconds(model, gpu, tokens, tp, knobs) + request_s·requests + context·kv_bytes/(tp·η_bw·BW)

which is exactly `CostTable.step_seconds` of the table `load_cost(FIT.json, tp=...)` builds.

Robust least squares on relative error: residuals are log(predicted / measured); Levenberg–Marquardt on
the knobs mapped to unbounded coordinates (a logistic map onto each interval), with Huber weights
(scale 5 %); then points off by more than max(3 robust σ of their phase, 25 %) are flagged as outliers and
the knobs refitted without them — outliers are reported, never bent to.

May import: numpy, the standard library, `specsched.errors`, `specsched.hardware`, `specsched.cost`,
`specsched.measured`, `specsched.safeio`.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from specsched import inputs, safeio
from specsched import price as hardware  # the catalogue and roofline (specsched.price)
from specsched.cost import CostTable
from specsched.errors import InputError
from specsched.measured import Points
from specsched.price.knobs import FIT_START

#: knob -> (lower, upper) bound; the fit stays strictly inside (logistic map).
BOUNDS: dict[str, tuple[float, float]] = {
    "c0": (0.0, 5e-3),
    "eta_bw": (0.0, 1.0),
    "eta_f": (0.0, 1.0),
    "link_bw": (1e9, 1e13),
    "hop_latency": (0.0, 1e-3),
    # Per running request per step beyond its KV reads (their own term): one row of sampling over the
    # vocabulary (≤ 0.5 MB of fp32 logits, < 1 µs at HBM rates) and the row's host-side input and block-
    # table prep (µs). 20 µs bounds that; a larger per-request term is a stack's queueing or Python
    # overhead that does not carry to another stack (measured: a 0.26 ms fit made vLLM runs saturate).
    "request_s": (0.0, 20e-6),
}
#: the knobs a fit fits: request_s is not one (a fit file may carry one, within its bound, and it is used)
KNOBS: tuple[str, ...] = tuple(k for k in BOUNDS if k != "request_s")
_START = FIT_START  # the one Knobs' starting point (specsched.price.knobs)
_HUBER = 0.05  # relative error below which a point counts fully
_OUTLIER = math.log(1.25)  # never flag a point within 25 %
FIT_VERSION = 1


@dataclass(frozen=True)
class Fit:
    """A fitted (or given) set of knobs for one model shape on one GPU, with where they came from."""

    model: str
    gpu: str
    knobs: dict
    provenance: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "version": FIT_VERSION,
            "model": self.model,
            "gpu": self.gpu,
            "knobs": self.knobs,
            "provenance": self.provenance,
        }

    def save(self, path: str | Path) -> None:
        safeio.write_text(path, json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n")  # atomic


def load_fit(path: str | Path) -> Fit:
    """Read FIT.json; `InputError` naming the file and field if it is unreadable or malformed."""
    file = str(path)
    doc = inputs.load_json(path, what="fit file")  # regular file, size cap, digit/depth/finite limits
    with inputs.reading(file):
        return _parse_fit(doc, file)


#: the extra knobs a fit may carry: key -> (lower, upper, whole number)
_EXTRA = {"link_latency": (0.0, 1e-2, False), "bytes_per_param": (0.125, 8.0, False), "ep": (1, 1024, True)}


def _parse_fit(doc, file: str) -> Fit:
    if not isinstance(doc, dict):
        raise InputError("not a fit file: expected a JSON object", file=file)
    for key in ("model", "gpu", "knobs"):
        if key not in doc:
            raise InputError("missing (not a `specbed cost fit` file?)", file=file, field=key)
    if doc.get("version", FIT_VERSION) != FIT_VERSION:
        raise InputError(f"unknown fit version (this build reads {FIT_VERSION})", file=file, field="version")
    knobs = doc["knobs"]
    if not isinstance(knobs, dict):
        raise InputError("expected an object of knob → value", file=file, field="knobs")
    for key, val in knobs.items():
        if key not in BOUNDS and key not in ("link_latency", "bytes_per_param", "ep", "overlap_comm"):
            raise InputError(f"unknown knob (known: {', '.join(BOUNDS)})", file=file, field=f"knobs.{key}")
        if key == "overlap_comm" and isinstance(val, bool):
            continue
        if isinstance(val, bool) or not isinstance(val, (int, float)) or not math.isfinite(val) or val < 0:
            raise InputError(f"must be a number ≥ 0, got {val!r}", file=file, field=f"knobs.{key}")
        lo, hi, whole = _EXTRA.get(key, (*BOUNDS.get(key, (0.0, math.inf)), False))
        if not lo <= val <= hi or (whole and val % 1):
            kind = "a whole number" if whole else "a number"
            raise InputError(
                f"must be {kind} in [{lo:g}, {hi:g}], got {val!r}", file=file, field=f"knobs.{key}"
            )
    try:
        hardware.get_model(doc["model"])
        hardware.get_gpu(doc["gpu"])
        _validate(knobs)
    except ValueError as err:
        raise InputError(str(err), file=file) from None
    return Fit(str(doc["model"]), str(doc["gpu"]), dict(knobs), dict(doc.get("provenance") or {}))


def fit_table(fit: Fit, *, tp: int = 1, ep: int = 1, name: str | None = None) -> CostTable:
    """The context-aware roofline table of a fit for a `tp`-GPU replica (or `ep`-way expert parallelism):
    exactly `CostTable.roofline(fit.model, fit.gpu, tp=tp, ep=ep, context_tokens=None, **fit.knobs)`."""
    knobs = dict(fit.knobs)
    if ep != 1:
        knobs["ep"] = ep
    label = name or f"fit:{fit.model}@{fit.gpu}x{tp}" + (f"ep{ep}" if ep != 1 else "")
    return CostTable.roofline(fit.model, fit.gpu, tp=tp, name=label, context_tokens=None, **knobs)


def _validate(knobs: dict) -> None:
    for key in ("eta_bw", "eta_f"):
        if key in knobs and not 0 < knobs[key] <= 1:
            raise ValueError(f"fit: {key} must be in (0, 1], got {knobs[key]!r}")
    if "link_bw" in knobs and not knobs["link_bw"] > 0:
        raise ValueError(f"fit: link_bw must be > 0, got {knobs['link_bw']!r}")


def predict(points: Points, model, gpu, knobs: dict) -> np.ndarray:
    """float64[n]: predicted seconds of each point with the roofline `knobs` (context-aware)."""
    shape, dev = hardware.get_model(model), hardware.get_gpu(gpu)
    knobs = {k: v for k, v in knobs.items() if k != "context_tokens"}
    out = np.empty(len(points))
    for tp in np.unique(points.tp):
        sel = points.tp == tp
        t = int(tp)
        attn = attention_flops(
            shape, points.phase[sel], points.tokens[sel], points.requests[sel], points.context[sel]
        )
        step = hardware.step_seconds(
            shape, dev, points.tokens[sel], tp=t, context_tokens=None, attn_flops=attn, **knobs
        )
        per_kv = hardware.kv_token_seconds(shape, dev, tp=t, eta_bw=knobs.get("eta_bw", 0.9))
        out[sel] = step + knobs.get("request_s", 0.0) * points.requests[sel] + per_kv * points.context[sel]
    return out


def attention_flops(shape, phase, tokens, requests, context) -> np.ndarray:
    """float64[n]: attention FLOPs of each step (QKᵀ and PV, 2 FLOPs per multiply-add, d_model wide):
    4·layers·d_model·Σ_r q_r·ctx_r. A decode step reads its whole context per query token; a prefill step
    of requests of p tokens each is causal, so each query sees p/2 on average: 2·layers·d_model·p²·n."""
    q_per = tokens / requests
    ctx_per = context / requests
    causal = np.where(phase == "prefill", 0.5, 1.0)
    return 4.0 * shape.layers * shape.d_model * requests * q_per * ctx_per * causal


# -- the fit ----------------------------------------------------------------------------------------------

_LOG = np.array([k == "link_bw" for k in KNOBS])  # spans decades: mapped in log space
_LO = np.array([math.log(BOUNDS[k][0]) if k == "link_bw" else BOUNDS[k][0] for k in KNOBS])
_HI = np.array([math.log(BOUNDS[k][1]) if k == "link_bw" else BOUNDS[k][1] for k in KNOBS])
_XMAX = 30.0  # |x| cap: keeps every knob strictly inside its interval in float64


def _to_knobs(x: np.ndarray) -> dict:
    u = 1.0 / (1.0 + np.exp(-np.clip(x, -_XMAX, _XMAX)))
    v = _LO + u * (_HI - _LO)
    v[_LOG] = np.exp(v[_LOG])
    return {k: float(val) for k, val in zip(KNOBS, v)}


def _to_x(knobs: dict) -> np.ndarray:
    v = np.array([knobs[k] for k in KNOBS], dtype=np.float64)
    v[_LOG] = np.log(v[_LOG])
    u = np.clip((v - _LO) / (_HI - _LO), 1e-12, 1 - 1e-12)
    return np.log(u / (1 - u))


def _residuals(x: np.ndarray, points: Points, model, gpu) -> np.ndarray:
    return np.log(predict(points, model, gpu, _to_knobs(x)) / points.seconds)


def _lm(x: np.ndarray, points: Points, model, gpu, weights: np.ndarray, iters: int = 200) -> np.ndarray:
    """Levenberg–Marquardt on Σ w·r² (forward-difference Jacobian; few knobs, so cheap)."""
    lam = 1e-2
    r = _residuals(x, points, model, gpu)
    cost = float(np.sum(weights * r * r))
    for _ in range(iters):
        jac = np.empty((r.size, x.size))
        for j in range(x.size):
            dx = np.zeros_like(x)
            dx[j] = 1e-6 * max(1.0, abs(x[j]))
            jac[:, j] = (_residuals(x + dx, points, model, gpu) - r) / dx[j]
        jw = jac * weights[:, None]
        a, g = jw.T @ jac, jw.T @ r
        improved = False
        while lam < 1e10:
            step = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
            x_new = np.clip(x + step, -_XMAX, _XMAX)
            r_new = _residuals(x_new, points, model, gpu)
            cost_new = float(np.sum(weights * r_new * r_new))
            if cost_new < cost:
                improved = cost - cost_new > 1e-12 * max(cost, 1e-30)
                x, r, cost, lam = x_new, r_new, cost_new, max(lam / 3, 1e-9)
                break
            lam *= 4
        if not improved:
            break
    return x


def _robust(points: Points, model, gpu, starts: list[dict]) -> np.ndarray:
    """Huber-weighted LM (reweighted a few times) from each start; the best by robust loss."""
    best, best_loss = None, math.inf
    for start in starts:
        x = _to_x(start)
        w = np.ones(len(points))
        for _ in range(4):
            x = _lm(x, points, model, gpu, w)
            r = np.abs(_residuals(x, points, model, gpu))
            w = np.minimum(1.0, _HUBER / np.maximum(r, 1e-12))
        loss = float(np.sum(np.where(r <= _HUBER, r * r / 2, _HUBER * (r - _HUBER / 2))))
        if loss < best_loss:
            best, best_loss = x, loss
    return best


def _outliers(points: Points, r: np.ndarray) -> np.ndarray:
    """bool[n]: log-errors beyond max(3 robust σ of their phase, log 1.25) — a point off by more than that
    is a measurement to look at (a failed run, a regime the roofline does not model), not one to fit."""
    out = np.zeros(r.size, dtype=bool)
    for phase in np.unique(points.phase):
        sel = points.phase == phase
        rp = r[sel]
        sigma = 1.4826 * float(np.median(np.abs(rp - np.median(rp))))
        out[sel] = np.abs(rp) > max(3 * sigma, _OUTLIER)
    return out


def fit(points: Points, model, gpu) -> tuple[dict, np.ndarray]:
    """Fit the knobs to `points`; returns (knobs, outlier mask bool[n]). ValueError for unknown names."""
    hardware.get_model(model), hardware.get_gpu(gpu)  # unknown names fail before any work
    starts = [dict(_START), dict(_START, eta_bw=0.95, c0=150e-6, eta_f=0.7, link_bw=40e9)]
    x = _robust(points, model, gpu, starts)
    outlier = _outliers(points, _residuals(x, points, model, gpu))
    if outlier.any() and (~outlier).sum() >= len(KNOBS):
        x = _robust(points.take(~outlier), model, gpu, [_to_knobs(x)])
        outlier = _outliers(points, _residuals(x, points, model, gpu))
    return _to_knobs(x), outlier


# -- summaries ---------------------------------------------------------------------------------------------


def error_pct(points: Points, predicted: np.ndarray) -> np.ndarray:
    """float64[n]: signed error of each prediction, % of the measured value."""
    return 100.0 * (predicted - points.seconds) / points.seconds


def summary(points: Points, predicted: np.ndarray, mask: np.ndarray | None = None) -> dict:
    """`specbed cost check --json`'s object: points, per phase and per TP × phase MAPE and max error (%)."""
    err = np.abs(error_pct(points, predicted))
    keep = np.ones(len(points), bool) if mask is None else np.asarray(mask, bool)

    def stats(sel: np.ndarray) -> dict:
        sel = sel & keep
        n = int(sel.sum())
        if n == 0:
            return {"points": 0, "mape_pct": None, "max_pct": None}
        return {
            "points": n,
            "mape_pct": round(float(err[sel].mean()), 3),
            "max_pct": round(float(err[sel].max()), 3),
        }

    out: dict = {"points": int(keep.sum())}
    for phase in ("decode", "prefill"):
        out[phase] = stats(points.phase == phase)
    if np.any(points.phase == "draft"):
        out["draft"] = stats(points.phase == "draft")
    out["by_tp"] = {}
    for tp in np.unique(points.tp[keep]):
        per = {ph: stats((points.tp == tp) & (points.phase == ph)) for ph in ("decode", "prefill")}
        if np.any((points.phase == "draft") & (points.tp == tp)):
            per["draft"] = stats((points.tp == tp) & (points.phase == "draft"))
        out["by_tp"][str(int(tp))] = per
    return out


def file_hash(paths) -> str:
    """sha256 over the measured files' bytes, in the order given (provenance)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()
