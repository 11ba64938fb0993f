"""Physical forms of vLLM's kernel times on one GPU, and their fit to measured kernel tables.

Role: each kind of kernel the vLLM step is made of gets one roofline form with a fixed time, its few
per-GPU figures fitted in log space (relative error), and a leave-one-GPU-out prediction that uses only
the held-out GPU's datasheet and the other GPUs' figures. Forms (seconds; BW, F: the datasheet HBM
bandwidth and dense tensor FLOP/s; `clock`: the max boost clock):

    gemm      t = L + max(bytes / (eta_bw·BW), flops / (eta_f·F·r))      bytes = a·(m·k + k·n) + 2·m·n
              (a: bytes per operand element; r: 2 for FP8 on Hopper/Blackwell/Ada, else 1). The fixed
              time L makes the achieved bandwidth a saturating curve in the bytes moved:
              bytes/t = eta_bw·BW · bytes / (bytes + L·eta_bw·BW).
    gemm_fp8  the gemm form at the FP8 rate and 1-byte operands, + q·m·k: vLLM quantizes the BF16
              activations to FP8 on the fly (a dynamic scale: a max-reduction, then a scaling pass), q
              seconds per activation element — the scaling overhead, fitted per GPU
    ctx_attn  t = L + flops / (eta_f·F·u) + bytes / (eta_bw·BW)
              flops = 2·b·h·d·isl² (causal QKᵀ and PV); bytes = b·isl·d·2·(2·h + 4·kv_heads): Q read,
              O written, K and V read and written to the paged cache
              u = P / (P + w): the share of the GPU a kernel of P parallel work units per SM keeps busy
              (P = b·h·⌈isl/128⌉ query tiles over the SMs); w fitted
    gen_attn  t = L + bytes / (eta_bw·BW) + s·b·h     bytes = b·kv_heads·d·2·2·ctx (K and V, 2-byte
              cache); s: per query row (a sequence's head: set-up, Q, the split-KV reduction, O)
    allreduce t = L + h·(n−2) + 2·(n−1)/n · size / (eta_bw·link_bw)   (n GPUs; ring-equivalent traffic;
              h: the latency each GPU beyond two adds — small over NVLink, large over PCIe)

Leave-one-GPU-out: the held-out GPU gets the median efficiency of the other GPUs and their median fixed
time carried by the boost-clock ratio (L·clock is a count of cycles), or for the all-reduce by the
catalogue's link-latency ratio.

May import: numpy, the standard library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the kinds of kernel a form is fitted for, and the names of each one's figures
KINDS: dict[str, tuple[str, ...]] = {
    "gemm": ("L", "eta_bw", "eta_f"),
    "gemm_fp8": ("L", "eta_bw", "eta_f", "q"),
    "ctx_attn": ("L", "eta_f", "w", "eta_bw"),
    "gen_attn": ("L", "eta_bw", "s"),
    "allreduce": ("L", "eta_bw", "h"),
}


@dataclass(frozen=True)
class Sheet:
    """One GPU's datasheet: HBM bytes/s, dense BF16 FLOP/s, FP8 rate multiple (0: none), boost clock (Hz),
    GPU-to-GPU link bytes/s per direction, catalogue link latency (s)."""

    bw: float
    flops: float
    fp8: float
    clock: float
    link_bw: float
    link_latency: float


@dataclass(frozen=True)
class Shapes:
    """What a table's rows move and compute: float64[n] bytes, flops, the kind's denominator for each
    (`bw`: bytes/s at efficiency 1, `peak`: FLOP/s at efficiency 1) and the measured seconds (or None)."""

    bytes: np.ndarray
    flops: np.ndarray
    bw: float
    peak: float
    seconds: np.ndarray | None = None
    par: np.ndarray | None = None  # parallel work units per SM (attention), else None
    act: np.ndarray | None = None  # activation elements quantized (FP8 GEMMs: m·k), else None


def predict(kind: str, fig: dict, s: Shapes) -> np.ndarray:
    """float64[n] predicted seconds of rows `s` with figures `fig` (KINDS[kind] names)."""
    if kind in ("gemm", "gemm_fp8"):
        t_mem = s.bytes / (fig["eta_bw"] * s.bw)
        t_cmp = s.flops / (fig["eta_f"] * s.peak)
        quant = fig["q"] * s.act if kind == "gemm_fp8" and s.act is not None else 0.0
        return fig["L"] + np.maximum(t_mem, t_cmp) + quant
    if kind == "ctx_attn":
        return fig["L"] + s.flops / (fig["eta_f"] * s.peak * _busy(fig, s)) + s.bytes / (fig["eta_bw"] * s.bw)
    if kind == "gen_attn":
        return fig["L"] + s.bytes / (fig["eta_bw"] * s.bw) + fig["s"] * s.par
    if kind == "allreduce":
        return fig["L"] + fig["h"] * (s.par - 1.0) + s.bytes / (fig["eta_bw"] * s.bw)
    raise ValueError(f"unknown kernel kind {kind!r} (known: {', '.join(KINDS)})")


def _busy(fig: dict, s: Shapes) -> np.ndarray | float:
    return 1.0 if s.par is None else s.par / (s.par + fig["w"])


# -- the fit ----------------------------------------------------------------------------------------------

_EFF = (1e-3, 1.0)  # efficiencies: fractions of a datasheet peak
_FIXED = (1e-8, 1e-3)  # fixed times: 10 ns .. 1 ms


_WORK = (1e-3, 1e3)  # work units per SM at which a kernel keeps half the GPU busy
_QUANT = (1e-15, 1e-9)  # seconds per activation element quantized (≥ 1 G elements/s)
_ROW = (1e-13, 1e-6)  # seconds per query row (a sequence's head) of decode attention


def _bounds(name: str) -> tuple[float, float]:
    return {"L": _FIXED, "h": _FIXED, "w": _WORK, "q": _QUANT, "s": _ROW}.get(name, _EFF)


def _to_fig(kind: str, x: np.ndarray) -> dict:
    out = {}
    for name, xi in zip(KINDS[kind], x):
        lo, hi = (math.log(b) for b in _bounds(name))
        u = 1.0 / (1.0 + math.exp(-float(np.clip(xi, -30, 30))))
        out[name] = math.exp(lo + u * (hi - lo))
    return out


def _to_x(kind: str, fig: dict) -> np.ndarray:
    x = []
    for name in KINDS[kind]:
        lo, hi = (math.log(b) for b in _bounds(name))
        u = min(max((math.log(fig[name]) - lo) / (hi - lo), 1e-9), 1 - 1e-9)
        x.append(math.log(u / (1 - u)))
    return np.array(x)


_STARTS = (
    {"L": 5e-6, "eta_bw": 0.7, "eta_f": 0.6, "w": 1.0, "q": 1e-12, "h": 1e-6, "s": 1e-9},
    {"L": 2e-5, "eta_bw": 0.9, "eta_f": 0.8, "w": 0.1, "q": 1e-11, "h": 1e-7, "s": 1e-10},
)


def fit(kind: str, s: Shapes, *, iters: int = 100) -> dict:
    """Figures of `kind` minimising Σ log(pred/measured)² over rows `s` (Levenberg–Marquardt from two
    starts, the better kept; each figure held strictly inside its physical interval by a logistic map in
    log space)."""
    if s.seconds is None or s.seconds.size < len(KINDS[kind]):
        raise ValueError(f"kernel fit {kind}: needs ≥ {len(KINDS[kind])} measured rows")
    logy = np.log(s.seconds)

    def res(x: np.ndarray) -> np.ndarray:
        return np.log(predict(kind, _to_fig(kind, x), s)) - logy

    best = min((_lm(res, _to_x(kind, start), iters) for start in _STARTS), key=lambda xc: xc[1])
    return _to_fig(kind, best[0])


def _lm(res, x: np.ndarray, iters: int) -> tuple[np.ndarray, float]:
    """(x, Σ r²) after Levenberg–Marquardt on residuals `res` from `x` (forward-difference Jacobian)."""
    r, lam = res(x), 1e-2
    cost = float(r @ r)
    for _ in range(iters):
        jac = np.empty((r.size, x.size))
        for j in range(x.size):
            dx = np.zeros_like(x)
            dx[j] = 1e-6
            jac[:, j] = (res(x + dx) - r) / 1e-6
        a, g = jac.T @ jac, jac.T @ r
        done = True
        while lam < 1e10:
            x_new = x + np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
            r_new = res(x_new)
            if float(r_new @ r_new) < cost:
                done = cost - float(r_new @ r_new) < 1e-12 * max(cost, 1e-30)
                x, r, cost, lam = x_new, r_new, float(r_new @ r_new), max(lam / 3, 1e-9)
                break
            lam *= 4
        if done:
            break
    return x, cost


def carried(kind: str, others: dict[str, dict], sheets: dict[str, Sheet], target: str) -> dict:
    """The figures `target` gets from the other GPUs' fitted figures and its own datasheet: each
    efficiency their median; the fixed time their median carried by the clock ratio (all-reduce: by the
    catalogue link-latency ratio, a PCIe GPU's all-reduce being a different path; the FP8 scaling time
    per element: their median carried by the HBM-bandwidth ratio)."""
    out = {}
    for name in KINDS[kind]:
        if name == "q":  # seconds per element quantized: a bandwidth-bound pass, × the bandwidth ratio
            out["q"] = (
                float(np.median([f["q"] * sheets[g].bw for g, f in others.items()])) / sheets[target].bw
            )
            continue
        if name not in ("L", "h"):
            out[name] = float(np.median([f[name] for f in others.values()]))
        elif kind == "allreduce":
            per = [f[name] / sheets[g].link_latency for g, f in others.items()]
            out[name] = float(np.median(per)) * sheets[target].link_latency
        else:
            per = [f[name] * sheets[g].clock for g, f in others.items()]
            out[name] = float(np.median(per)) / sheets[target].clock
    return out


def errors_pct(kind: str, fig: dict, s: Shapes) -> np.ndarray:
    """float64[n]: signed error of the form with `fig` on rows `s`, % of measured."""
    return 100.0 * (predict(kind, fig, s) / s.seconds - 1.0)


def leave_one_out(kind: str, data: dict[str, Shapes], sheets: dict[str, Sheet]) -> dict[str, dict]:
    """Per GPU: {"fig": in-sample figures, "carried": figures from the other GPUs, "in_mape", "logo_mape"
    (% mean |error| of each on that GPU's rows)}. Needs ≥ 2 GPUs."""
    if len(data) < 2:
        raise ValueError("leave-one-GPU-out needs tables of at least two GPUs")
    figs = {g: fit(kind, s) for g, s in data.items()}
    out = {}
    for g, s in data.items():
        others = {h: f for h, f in figs.items() if h != g}
        car = carried(kind, others, sheets, g)
        out[g] = {
            "fig": figs[g],
            "carried": car,
            "in_mape": float(np.mean(np.abs(errors_pct(kind, figs[g], s)))),
            "logo_mape": float(np.mean(np.abs(errors_pct(kind, car, s)))),
        }
    return out
