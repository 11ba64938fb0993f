"""`specbed cost calibrate`: one GPU's roofline knobs, fitted to measured vLLM runs end to end.

Role: fit `sim.vllm_deploy.Knobs` — shared by every model on the GPU — so that simulated runs match the
measured ones, and say how well that carries to a model the fit has not seen (leave-one-model-out).

The fit goes through the simulator. A run's pooled inter-token latency is Σ_k r_k·t_k / Σ_k r_k over its
steps k (r_k requests decoding, each step's t_k one gap for each of them), and t_k is linear in the knobs
once the steps' contents are known:

    t_k = step_s + c0·layers + (1/eta_bw)·w_k + (1/eta_kv)·a_k + link_latency·2·layers·[tp > 1] + φ_k

          + c_moe·moe_layers
(w_k: the step's weight bytes over the GPU's bandwidth; a_k: its KV bytes read over it; φ_k: what the knobs
do not scale — a compute-bound step's FLOPs, collective bytes, offload). So: simulate every run with the
current knobs, collect the r-weighted means of those features per run, solve a non-negative least squares
in relative error against the measured seconds per token, (e2e − TTFT) / (output − 1) (`token_seconds`:
not the reported ITL, whose gaps are between streamed chunks) for (step_s, c0, 1/eta_bw − 1,
1/eta_kv − 1, link_latency, c_moe) — every knob physical:
times ≥ 0, efficiencies ≤ 1 — and repeat with the new knobs (the batch a run holds moves a little with
them); three rounds settle it. `frontend_s` (the API server's per-request time, on TTFT and end to end)
is then the median over runs of measured − simulated TTFT. eta_f stays at its datasheet value: with
prefix caching the runs' prefills are a few tokens, so compute is not identified by them.

Leave-one-model-out: for each model, the same least squares on the other models' runs (their features from
the in-sample fixed point), then the held-out model's runs simulated from scratch with those knobs.

May import: numpy, the standard library, `sim`, `specsched`, `specbed.validate*`.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from sim.vllm_deploy import HOST_BW, HOST_BW_DEFAULT, Knobs, VllmSpec, step_parts
from sim.vllm_kv import kv_bytes_per_token_per_gpu
from specbed import validate as v
from specbed.validate_runs import MeasuredRun
from specsched.graphs import vllm_capture_sizes

FEATURES = ("step_s", "c0", "eta_bw", "eta_kv", "link_latency", "c_moe")
#: weak priors (datasheet-style values, x-space of `solve`): each knob's deviation from its prior costs
#: PRIOR_WEIGHT × the relative step time it moves in a typical run. They decide only what the runs leave
#: open (13 runs, collinear features: layers track weight bytes), e.g. eta_kv in a fold without a
#: KV-heavy run; the fit is a MAP estimate, stable from round to round.
PRIORS = {
    "step_s": 0.0,
    "c0": 40e-6,
    "eta_bw": 1 / 0.85 - 1,
    "eta_kv": 1 / 0.8 - 1,
    "link_latency": 10e-6,
    "c_moe": 0.0,
}
PRIOR_WEIGHT = 0.3
ROUNDS = 3


class StepFeatures:
    """An observer (`Deployment.observer`) summing r-weighted step features of one simulated run."""

    def __init__(self, spec: VllmSpec, knobs: Knobs) -> None:
        m, g, bpp = spec.resolve()
        top = max(spec.max_num_batched_tokens, 8192) + 1
        b = np.arange(top, dtype=np.float64)
        if spec.cudagraphs:  # the size a step's forward actually runs at
            sizes = np.asarray(vllm_capture_sizes(spec.max_capture))
            idx = np.searchsorted(sizes, b, side="left")
            b = np.where(b <= sizes[-1], sizes[np.minimum(idx, sizes.size - 1)], b)
        shape = m.shape(bpp)
        bw = g.gpu.hbm_bw
        self.w = shape.weight_params_read(b) * bpp / spec.tp / bw  # weight time at full bandwidth
        core = step_parts(spec, knobs, b)["weights_or_compute"]
        mem_bound = self.w / knobs.eta_bw >= core - 1e-15  # the weight read binds the step (not compute)
        self.phi = np.where(mem_bound, core - self.w / knobs.eta_bw, core)
        self.w = np.where(mem_bound, self.w, 0.0)
        self.kv_byte_s = kv_bytes_per_token_per_gpu(m, spec.tp) / bw
        self.kv_s = self.kv_byte_s / knobs.eta_kv
        offload = spec.cpu_offload_gb * 1e9 / HOST_BW.get(g.key, HOST_BW_DEFAULT)
        self.layers, self.links, self.moe = m.layers, (2 * m.layers if spec.tp > 1 else 0), m.moe_layers
        self.offload = offload
        self.sums = np.zeros(6)  # Σ r·(w, a, φ) and Σ r
        self.weight = 0.0

    def __call__(self, rep, start, seconds, r, verify, prefill, lengths, accepted, emitted, bill) -> None:
        if not r:
            return
        tokens = min(verify + prefill, self.w.size - 1)
        kv = bill.context / self.kv_s if self.kv_s else 0.0
        self.sums[0] += r * self.w[tokens]
        self.sums[1] += r * kv * self.kv_byte_s
        self.sums[2] += r * self.phi[tokens]
        self.weight += r

    def row(self) -> tuple[np.ndarray, float]:
        """(features by FEATURES, the fixed part φ), both r-weighted means over the run's steps (seconds)."""
        w, a, phi = self.sums[:3] / max(self.weight, 1.0)
        return np.array([1.0, self.layers, w, a, self.links, self.moe]), phi + self.offload


def nnls(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares min ‖a·x − y‖, x ≥ 0, exactly: every support set (a few unknowns)."""
    best, best_res = np.zeros(a.shape[1]), float(np.sum(y * y))
    for k in range(1, a.shape[1] + 1):
        for cols in itertools.combinations(range(a.shape[1]), k):
            x, *_ = np.linalg.lstsq(a[:, cols], y, rcond=None)
            if np.all(x >= 0):
                res = float(np.sum((a[:, cols] @ x - y) ** 2))
                if res < best_res - 1e-18:
                    best, best_res = np.zeros(a.shape[1]), res
                    best[list(cols)] = x
    return best


def solve(rows: list[tuple[np.ndarray, float]], itl_s: list[float], base: Knobs) -> Knobs:
    """Knobs from per-run (features, φ) and measured ITLs (seconds): NNLS in relative error."""
    f = np.array([r[0] for r in rows])
    phi = np.array([r[1] for r in rows])
    y = np.asarray(itl_s)
    # 1/eta = 1 + x: the unit parts move to the left side, x ≥ 0 keeps eta ≤ 1
    lhs = (y - phi - f[:, 2] - f[:, 3]) / y
    a = f / y[:, None]
    scale = PRIOR_WEIGHT * np.abs(a).mean(axis=0)
    prior = scale * np.array([PRIORS[k] for k in FEATURES])
    x = nnls(np.vstack([a, np.diag(scale)]), np.append(lhs, prior))
    return replace(
        base,
        step_s=float(x[0]),
        c0=float(x[1]),
        eta_bw=float(1.0 / (1.0 + x[2])),
        eta_kv=float(1.0 / (1.0 + x[3])),
        link_latency=float(x[4]),
        c_moe=float(x[5]),
    )


def token_seconds(run: MeasuredRun, profiles: dict) -> float:
    """A run's measured seconds per generated token, (e2e − TTFT) / (output − 1) from its means: what the
    fit targets rather than the reported ITL, whose gaps are between streamed chunks — a tokenizer that
    holds back partial characters (Llama-2's byte fallback on random text) sends fewer, longer ones."""
    out = (
        profiles[run.profile].output_tokens
        if run.workload is None
        else float(run.workload.output_tokens.mean())
    )
    return (run.actual["e2e_mean"] - run.actual["ttft_mean"]) / 1e3 / max(out - 1.0, 1.0)


def simulate(
    runs: list[MeasuredRun], knobs: Knobs, profiles: dict, *, seed: int, scale: float, progress=None
):
    """Per run: (predicted metrics without the frontend, features row)."""
    out = []
    bare = replace(knobs, frontend_s=0.0)
    for run in runs:
        obs = StepFeatures(run.spec, bare)
        sim = v.simulate_run(run, bare, profiles, seed=seed, scale=scale, observer=obs)
        out.append((sim["predicted"], obs.row()))
        if progress is not None:
            progress()
    return out


def frontend(runs: list[MeasuredRun], preds: list[dict]) -> float:
    """The API server's per-request seconds: median of measured − simulated mean TTFT (≥ 0)."""
    gaps = [(run.actual["ttft_mean"] - p["ttft_mean"]) / 1e3 for run, p in zip(runs, preds)]
    return max(0.0, float(np.median(gaps)))


def with_frontend(pred: dict, frontend_s: float) -> dict:
    add = frontend_s * 1e3
    return {m: (val + add if not m.startswith("itl") else val) for m, val in pred.items()}


def calibrate(
    runs: list[MeasuredRun],
    profiles: dict,
    *,
    base: Knobs | None = None,
    seed: int = 0,
    scale: float = 1.0,
    rounds: int = ROUNDS,
    progress=None,
) -> dict:
    """The in-sample fit (knobs and every run's prediction) and the leave-one-model-out one."""
    knobs = base or Knobs()
    itl = [token_seconds(run, profiles) for run in runs]
    history = []
    for _ in range(rounds):
        sims = simulate(runs, knobs, profiles, seed=seed, scale=scale, progress=progress)
        knobs = solve([s[1] for s in sims], itl, knobs)
        history.append(knobs)
    sims = simulate(runs, knobs, profiles, seed=seed, scale=scale, progress=progress)
    knobs = replace(knobs, frontend_s=frontend(runs, [s[0] for s in sims]))
    in_sample = [with_frontend(s[0], knobs.frontend_s) for s in sims]
    lomo_preds: list[dict | None] = [None] * len(runs)
    lomo_knobs = {}
    for model in sorted({r.spec.model for r in runs}):
        train = [i for i, r in enumerate(runs) if r.spec.model != model]
        test = [i for i, r in enumerate(runs) if r.spec.model == model]
        if len(train) < len(FEATURES):
            continue
        fold = solve([sims[i][1] for i in train], [itl[i] for i in train], knobs)
        # the training runs' TTFT at the fold's knobs: each run's step times scale with its ITL
        scaled = [_rescale(sims[i][0], fold, knobs, sims[i][1]) for i in train]
        fold = replace(fold, frontend_s=frontend([runs[i] for i in train], scaled))
        lomo_knobs[model] = fold
        held = simulate([runs[i] for i in test], fold, profiles, seed=seed, scale=scale, progress=progress)
        for i, s in zip(test, held):
            lomo_preds[i] = with_frontend(s[0], fold.frontend_s)
    return {
        "knobs": knobs,
        "in_sample": in_sample,
        "lomo": lomo_preds,
        "lomo_knobs": lomo_knobs,
        "rounds": history,
    }


def _rescale(pred: dict, new: Knobs, old: Knobs, row: tuple[np.ndarray, float]) -> dict:
    """A run's simulated TTFT with `old` knobs moved to `new` in proportion to its predicted ITL."""
    f, phi = row
    t_old = _itl(f, phi, old)
    ratio = _itl(f, phi, new) / t_old if t_old > 0 else 1.0
    return {**pred, "ttft_mean": pred["ttft_mean"] * ratio}


def _itl(f: np.ndarray, phi: float, k: Knobs) -> float:
    link = 0.0 if k.link_latency is None else k.link_latency
    return float(
        k.step_s + k.c0 * f[1] + f[2] / k.eta_bw + f[3] / k.eta_kv + link * f[4] + k.c_moe * f[5] + phi
    )


def describe(knobs: Knobs) -> str:
    link = "catalogue" if knobs.link_latency is None else f"{knobs.link_latency * 1e6:.1f} µs"
    return (
        f"step_s {knobs.step_s * 1e3:.3f} ms, c0 {knobs.c0 * 1e6:.1f} µs/layer, eta_bw {knobs.eta_bw:.3f}, "
        f"eta_kv {knobs.eta_kv:.3f}, link_latency {link}, c_moe {knobs.c_moe * 1e6:.1f} µs/MoE layer, "
        f"frontend_s {knobs.frontend_s * 1e3:.2f} ms, "
        f"eta_f {knobs.eta_f:.2f}"
    )
