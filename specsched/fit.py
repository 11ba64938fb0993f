"""Fit the roofline's physical knobs to measured steps, predict steps with them, and the FIT.json file.

Role: ground `specsched.price.roofline.step_seconds` in measurements. A fit keeps the roofline's formula and
fits five bounded knobs, shared across TP degrees (so a fit on TP 2 and 4 predicts TP 8, and the same knobs
with another GPU's or model's specs predict that GPU or model):

    c0           per-layer fixed time (launches, norms, small kernels), seconds      (0, 5 ms]
    eta_bw       achieved fraction of HBM bandwidth                                   (0, 1]
    eta_f        achieved fraction of dense tensor throughput                         (0, 1]
    link_bw      effective bandwidth of the TP all-reduces, bytes/s                   [1 GB/s, 10 TB/s]
    hop_latency  latency per extra GPU in each collective, seconds                    [0, 1 ms]
    eager_s      per-layer host time of a prefill step run eagerly (no CUDA graph:     [0, 1 ms]
                 each kernel launched from Python); launches overlap the GPU's work, so a prefill
                 step takes max(layers·eager_s, its GPU time) — the small-prefill floor
    request_s    per running request per step (sampling, bookkeeping), seconds        [0, 20 µs]
                 — not fitted (0): it has no physical work of its own beyond the KV reads; a fit file
                 may set one within the bound

The efficiencies and the link are bounded by what vLLM's own kernels reach on the fit's GPU
(`specsched.kernels`, measured kernel tables): eta_bw ≤ its decode-shaped GEMMs' bandwidth efficiency,
eta_f ≤ its large GEMMs' tensor efficiency, link_bw ≤ its custom all-reduce's achieved bandwidth — a step
is never faster than the kernels it is made of. A GPU without kernel tables keeps the bounds above.

A point with `tokens` query tokens, `requests` requests and `context` KV tokens read takes

    step_seconds(model, gpu, tokens, tp, knobs) + request_s·requests + context·kv_bytes/(tp·η_bw·BW)

(a prefill point: at least layers·eager_s), which is `CostTable.step_seconds` of the table
`load_cost(FIT.json, tp=...)` builds but for the eager floor (the sim's steps are graph-captured).

Robust least squares on relative error: residuals are log(predicted / measured), each weighted by 1 / the
number of points of its setting (a setting measured 45 times counts as much as one measured 5 times);
Levenberg–Marquardt on the knobs mapped to unbounded coordinates (a logistic map onto each interval), with
Huber weights (scale 5 %); then points off by more than max(3 robust σ of their phase, 25 %) are flagged as
outliers and the knobs refitted without them — outliers are reported, never bent to.

May import: numpy, the standard library, `specsched.io.errors`, `specsched.price.roofline`, `specsched.cost`,
`specsched.measured`, `specsched.io.safeio`, `specsched.io.inputs`, `specsched.kernels`.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from specsched import kernels
from specsched import price as hardware  # the catalogue and roofline (specsched.price)
from specsched.cost import CostTable
from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.io.results import write_json
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
    # A prefill step's eager launches: ≤ ~50 kernels a layer at ≤ 20 µs each from Python.
    "eager_s": (0.0, 1e-3),
}
#: the knobs a fit fits: request_s is not one (a fit file may carry one, within its bound, and it is used)
KNOBS: tuple[str, ...] = tuple(k for k in BOUNDS if k != "request_s")
_START = FIT_START  # the one Knobs' starting point (specsched.price.knobs)
#: knobs of a fit that `hardware.step_seconds` does not take (priced here)
_OWN = ("eager_s", "context_tokens")
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
        write_json(path, self.to_json(), field="--out")  # atomic, strict JSON


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
    knobs = {k: v for k, v in fit.knobs.items() if k not in _OWN}  # the sim's steps are graph-captured
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
    eager = knobs.get("eager_s", 0.0)
    knobs = {k: v for k, v in knobs.items() if k not in _OWN}
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
    if eager:
        out = np.where(points.phase == "prefill", np.maximum(out, shape.layers * eager), out)
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


def bounds(gpu) -> dict[str, tuple[float, float]]:
    """BOUNDS with the efficiencies and the link capped by what vLLM's kernels reach on `gpu` (module
    docstring); BOUNDS itself for a GPU the kernel tables do not cover."""
    out = dict(BOUNDS)
    try:
        caps = kernels.kernel_caps(gpu)
    except InputError:
        return out
    for key, cap in caps.items():
        lo, hi = out[key]
        out[key] = (lo, min(hi, cap))
    return out


@dataclass(frozen=True)
class _Space:
    """The fit's coordinates: each knob a logistic map onto its interval (link_bw in log space)."""

    lo: np.ndarray
    hi: np.ndarray
    log: np.ndarray

    @classmethod
    def of(cls, gpu) -> _Space:
        b = bounds(gpu)
        log = np.array([k == "link_bw" for k in KNOBS])  # spans decades: mapped in log space
        lo = np.array([math.log(b[k][0]) if k == "link_bw" else b[k][0] for k in KNOBS])
        hi = np.array([math.log(b[k][1]) if k == "link_bw" else b[k][1] for k in KNOBS])
        return cls(lo, hi, log)


_XMAX = 30.0  # |x| cap: keeps every knob strictly inside its interval in float64


def _to_knobs(x: np.ndarray, sp: _Space) -> dict:
    u = 1.0 / (1.0 + np.exp(-np.clip(x, -_XMAX, _XMAX)))
    v = sp.lo + u * (sp.hi - sp.lo)
    v[sp.log] = np.exp(v[sp.log])
    return {k: float(val) for k, val in zip(KNOBS, v)}


def _to_x(knobs: dict, sp: _Space) -> np.ndarray:
    v = np.array([knobs[k] for k in KNOBS], dtype=np.float64)
    v[sp.log] = np.log(v[sp.log])
    u = np.clip((v - sp.lo) / (sp.hi - sp.lo), 1e-12, 1 - 1e-12)
    return np.log(u / (1 - u))


def _residuals(x: np.ndarray, points: Points, model, gpu, sp: _Space) -> np.ndarray:
    return np.log(predict(points, model, gpu, _to_knobs(x, sp)) / points.seconds)


def _lm(x: np.ndarray, points: Points, model, gpu, weights: np.ndarray, sp: _Space, iters: int = 200):
    """Levenberg–Marquardt on Σ w·r² (forward-difference Jacobian; few knobs, so cheap)."""
    lam = 1e-2
    r = _residuals(x, points, model, gpu, sp)
    cost = float(np.sum(weights * r * r))
    for _ in range(iters):
        jac = np.empty((r.size, x.size))
        for j in range(x.size):
            dx = np.zeros_like(x)
            dx[j] = 1e-6 * max(1.0, abs(x[j]))
            jac[:, j] = (_residuals(x + dx, points, model, gpu, sp) - r) / dx[j]
        jw = jac * weights[:, None]
        a, g = jw.T @ jac, jw.T @ r
        improved = False
        while lam < 1e10:
            step = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
            x_new = np.clip(x + step, -_XMAX, _XMAX)
            r_new = _residuals(x_new, points, model, gpu, sp)
            cost_new = float(np.sum(weights * r_new * r_new))
            if cost_new < cost:
                improved = cost - cost_new > 1e-12 * max(cost, 1e-30)
                x, r, cost, lam = x_new, r_new, cost_new, max(lam / 3, 1e-9)
                break
            lam *= 4
        if not improved:
            break
    return x


def _setting_weights(points: Points) -> np.ndarray:
    """float64[n]: 1 / the number of points of the same setting (phase, tp, requests, tokens, context):
    each measured setting weighs the same however many repeats or rows share it (the Splitwise file
    holds the 512-token prompt 45 times per TP, every other prompt length 5 times)."""
    keys = list(zip(points.phase.tolist(), points.tp.tolist(), points.requests.tolist(),
                    points.tokens.tolist(), np.round(points.context, 6).tolist()))  # fmt: skip
    counts: dict = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    return np.array([1.0 / counts[k] for k in keys])


def _robust(points: Points, model, gpu, starts: list[dict], sp: _Space) -> np.ndarray:
    """Huber-weighted LM (reweighted a few times) from each start; the best by robust loss."""
    best, best_loss = None, math.inf
    share = _setting_weights(points)
    for start in starts:
        x = _to_x(start, sp)
        w = share.copy()
        for _ in range(4):
            x = _lm(x, points, model, gpu, w, sp)
            r = np.abs(_residuals(x, points, model, gpu, sp))
            w = share * np.minimum(1.0, _HUBER / np.maximum(r, 1e-12))
        loss = float(np.sum(share * np.where(r <= _HUBER, r * r / 2, _HUBER * (r - _HUBER / 2))))
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
    sp = _Space.of(gpu)
    b = bounds(gpu)
    inside = {k: min(v, 0.9 * b[k][1]) for k, v in _START.items()}
    # a second start where the eager floor binds: the fit cannot find it from a floor that never binds
    starts = [inside, dict(inside, eta_bw=0.95 * b["eta_bw"][1], c0=150e-6, link_bw=40e9, eager_s=6e-4)]
    x = _robust(points, model, gpu, starts, sp)
    outlier = _outliers(points, _residuals(x, points, model, gpu, sp))
    if outlier.any() and (~outlier).sum() >= len(KNOBS):
        x = _robust(points.take(~outlier), model, gpu, [_to_knobs(x, sp)], sp)
        outlier = _outliers(points, _residuals(x, points, model, gpu, sp))
    return _to_knobs(x, sp), outlier


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
