"""`specbed cost calibrate`: one GPU's roofline knobs, fitted to measured vLLM runs end to end.

Role: fit `specsched.price.vllm.Knobs` — shared by every model on the GPU — so that simulated runs match the
measured ones, and say how well that carries to a model the fit has not seen (leave-one-model-out).

The fit goes through the simulator. A run's pooled inter-token latency is Σ_k r_k·t_k / Σ_k r_k over its
steps k (r_k requests decoding, each step's t_k one gap for each of them), and t_k is linear in the knobs
once the steps' contents are known:

    t_k = step_s + c0·layers + (1/eta_bw)·w_k + (1/eta_kv)·a_k + link_latency·2·layers·[tp > 1]
          + c_moe·moe_layers + c_token·u(B_k) + c_vocab·vocab·⌈R_k / SMs⌉·[filtered sampling] + φ_k

(w_k: the step's weight and GEMM-activation bytes over the GPU's bandwidth, 0 where compute binds; a_k:
its KV bytes read over it; B_k its tokens, R_k its requests; u: `specsched.price.vllm.token_units`, in
the shipped "row" form layers · min(B_k, max_num_seqs), the step's sampled rows through each layer;
φ_k: what the knobs do not scale — a compute-bound step's FLOPs, the kernels between the GEMMs and the
all-reduce bytes (`specsched.price.tokens`), prefill attention, offload). So: simulate every run
with the current knobs, collect the r-weighted means of those features per run, and fit (step_s, c0,
1/eta_bw − 1, 1/eta_kv − 1, link_latency, c_moe,
c_token, c_vocab) in relative error against the measured seconds per token, (e2e − TTFT) / (output − 1)
(`token_seconds`: not the reported ITL, whose gaps are between streamed chunks) — a MAP estimate with
physical priors and hard bounds (`PRIORS`, `BOUNDS`), solved exactly (`bounded_lsq`) — and repeat with
the new knobs (the batch a run holds moves a little with them); three rounds settle it. `frontend_s`
(the API server's per-request time, on TTFT and end to end) is then the median over runs of measured −
simulated TTFT. eta_f is not fitted: with prefix caching the runs' prefills are a few
tokens, so compute is not identified by them: it is the GPU's measured large-GEMM efficiency
(`specsched.kernels.kernel_caps`, the `base` knobs `specbed cost calibrate` passes).

Leave-one-model-out: for each model, the same fit on the other models' runs (their features from
the in-sample fixed point), then the held-out model's runs simulated from scratch with those knobs.

May import: numpy, the standard library, `sim`, `specsched`, `validate` modules.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from specsched.graphs import vllm_capture_sizes
from specsched.price.knobs import Knobs
from specsched.price.vllm import (
    HOST_BW,
    HOST_BW_DEFAULT,
    TOKEN_FORM,
    VllmSpec,
    memory_compute,
    step_parts,
    token_units,
)
from validate import predict as v
from validate.runs import MeasuredRun

FEATURES = ("step_s", "c0", "eta_bw", "eta_kv", "link_latency", "c_moe", "c_token", "c_vocab")
#: Physical priors, (mean, sd) in the x-space of `solve` (seconds; 1/eta − 1 for the efficiencies), and
#: hard bounds. The fit is a MAP estimate: each run's relative error counts against NOISE, each knob's
#: distance from its prior against its sd, so a knob the runs do not identify — c_moe in a fold without
#: an MoE model, link_latency without a tp > 1 run, eta_kv without a KV-heavy one — stays near its prior
#: instead of swinging to whatever absorbs the other knobs' residuals.
#:   step_s        0 ± 0.3 ms: host work per pass is overlapped by async scheduling (vLLM v0.15's default)
#:   c0            40 ± 15 µs a layer: ~11 kernels a dense decoder layer (norms, QKV, RoPE, KV write,
#:                 attention, O, MLP) at a few µs each inside a CUDA graph
#:   eta_bw        0.85 (0.78–0.92 at 1 sd): streaming GEMV/GEMM weight reads reach 80–92 % of HBM peak
#:   eta_kv        0.85, as eta_bw: paged attention streams the KV blocks from the same HBM (bounds 0.6–0.95)
#:   link_latency  8 ± 4 µs a collective: NVLink one-shot all-reduce on small messages
#:   c_moe         20 ± 15 µs a MoE layer: router GEMM, top-k, token sort/align and the weighted sum —
#:                 ~4 more small kernels than a dense MLP, at c0's few µs each
#:   c_token       0 ± 0.5 µs a running request a layer ("row" form): a request's row through each layer
#:                 a step (sampling and logits rows, per-sequence attention set-up, host bookkeeping)
#:   c_vocab       3 ± 3 ns a vocabulary entry a step: top-p / top-k sampling, one thread block a row
#:                 (rows in parallel over the SMs) making rejection rounds over the row's fp32 logits —
#:                 ~tens of passes at a block's tens of GB/s
PRIORS = {
    "step_s": (0.0, 0.3e-3),
    "c0": (40e-6, 15e-6),
    "eta_bw": (1 / 0.85 - 1, 0.1),
    "eta_kv": (1 / 0.85 - 1, 0.1),
    "link_latency": (8e-6, 4e-6),
    "c_moe": (20e-6, 15e-6),
    "c_token": (0.0, 0.5e-6),
    "c_vocab": (3e-9, 3e-9),
}
BOUNDS = {
    "step_s": (0.0, 5e-3),
    "c0": (0.0, 200e-6),
    "eta_bw": (1 / 0.95 - 1, 1 / 0.6 - 1),
    "eta_kv": (1 / 0.95 - 1, 1 / 0.6 - 1),
    "link_latency": (0.0, 50e-6),
    "c_moe": (0.0, 300e-6),
    "c_token": (0.0, 10e-6),
    "c_vocab": (0.0, 50e-9),
}
#: what c_token is per, in each per-token form (`specsched.price.vllm.TOKEN_FORMS`), for `describe`
TOKEN_FORM_UNIT = {"layer": "token", "shard": "token", "row": "sampled row"}
NOISE = 0.03  # the relative error a run's per-token time is trusted to (measurement + model)
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
        bw = g.gpu.hbm_bw
        # the memory side at full bandwidth (× 1/eta_bw) and the compute side, as the price has them
        t_mem, t_cmp = memory_compute(spec, knobs, b)
        w = t_mem * knobs.eta_bw
        core = step_parts(spec, knobs, b)["weights_or_compute"]
        # core = max(memory + c_token·u(B), compute) + what no knob scales (kernels between the GEMMs,
        # all-reduce bytes); the memory side binds when it alone reaches core − that part
        units = token_units(spec, b)  # what c_token multiplies per token (0 in the "row" form)
        mem = t_mem + knobs.c_token * units
        comm = core - np.maximum(mem, t_cmp)
        mem_bound = mem >= core - comm - 1e-15
        self.phi = np.where(mem_bound, comm, core)
        self.w = np.where(mem_bound, w, 0.0)
        self.tok = np.where(mem_bound, units, 0.0)
        self.kv_byte_s = m.kv_bytes_per_gpu(spec.tp) / bw
        self.kv_s = self.kv_byte_s / knobs.eta_kv
        offload = spec.cpu_offload_gb * 1e9 / HOST_BW.get(g.key, HOST_BW_DEFAULT)
        self.layers, self.links, self.moe = m.layers, (2 * m.layers if spec.tp > 1 else 0), m.moe_layers
        self.offload = offload
        rows = np.minimum(b, float(spec.max_num_seqs))  # sampled rows, in waves over the SMs
        self.samp = np.ceil(rows / g.sms) * m.vocab if m.filtered_sampling else np.zeros_like(b)
        self.sums = np.zeros(5)  # Σ r·(w, a, φ, tok, sampling waves·vocab)
        self.weight = 0.0

    def __call__(self, rep, start, seconds, r, verify, prefill, lengths, accepted, emitted, bill) -> None:
        if not r:
            return
        tokens = min(verify + prefill, self.w.size - 1)
        kv = bill.context / self.kv_s if self.kv_s else 0.0
        self.sums[0] += r * self.w[tokens]
        self.sums[1] += r * kv * self.kv_byte_s
        self.sums[2] += r * (self.phi[tokens] + bill.attention)  # prefill attention: no knob scales it
        self.sums[3] += r * self.tok[tokens]
        self.sums[4] += r * self.samp[tokens]
        self.weight += r

    def row(self) -> tuple[np.ndarray, float]:
        """(features by FEATURES, the fixed part φ), both r-weighted means over the run's steps (seconds)."""
        w, a, phi, tok, rv = self.sums / max(self.weight, 1.0)
        return np.array([1.0, self.layers, w, a, self.links, self.moe, tok, rv]), phi + self.offload


def base_knobs(gpu: str) -> Knobs:
    """The knobs a fit on `gpu` starts from: the defaults, eta_f the GPU's measured large-GEMM tensor
    efficiency (`specsched.kernels.kernel_caps`; the default where the kernel tables lack `gpu`)."""
    from specsched.io.errors import InputError
    from specsched.kernels import kernel_caps

    try:
        return Knobs(eta_f=round(kernel_caps(gpu)["eta_f"], 3))
    except InputError:
        return Knobs()


def bounded_lsq(a: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min ‖a·x − y‖ with lo ≤ x ≤ hi, exactly: every assignment of each unknown to free / at its lower
    bound / at its upper bound (a handful of unknowns), the best feasible one (the problem is convex)."""
    n = a.shape[1]
    best, best_res = np.clip(np.zeros(n), lo, hi), np.inf
    for states in itertools.product((0, 1, 2), repeat=n):
        x = np.where(np.array(states) == 1, lo, hi).astype(np.float64)
        free = [j for j, st in enumerate(states) if st == 0]
        rhs = y - a @ np.where(np.array(states) == 0, 0.0, x)
        if free:
            sol, *_ = np.linalg.lstsq(a[:, free], rhs, rcond=None)
            if np.any(sol < lo[free] - 1e-15) or np.any(sol > hi[free] + 1e-15):
                continue
            x[free] = sol
        res = float(np.sum((a @ x - y) ** 2))
        if res < best_res - 1e-18:
            best, best_res = x, res
    return best


def solve(rows: list[tuple[np.ndarray, float]], itl_s: list[float], base: Knobs) -> Knobs:
    """Knobs from per-run (features, φ) and measured seconds per token: the MAP fit (PRIORS, BOUNDS)."""
    f = np.array([r[0] for r in rows])
    phi = np.array([r[1] for r in rows])
    y = np.asarray(itl_s)
    # 1/eta = 1 + x: the unit parts move to the left side
    lhs = (y - phi - f[:, 2] - f[:, 3]) / y / NOISE
    a = f / y[:, None] / NOISE
    mean = np.array([PRIORS[k][0] for k in FEATURES])
    sd = np.array([PRIORS[k][1] for k in FEATURES])
    lo = np.array([BOUNDS[k][0] for k in FEATURES])
    hi = np.array([BOUNDS[k][1] for k in FEATURES])
    # unknowns in prior-sd units keep the system well scaled
    x = sd * bounded_lsq(
        np.vstack([a * sd, np.eye(len(FEATURES))]), np.append(lhs, mean / sd), lo / sd, hi / sd
    )
    return replace(
        base,
        step_s=float(x[0]),
        c0=float(x[1]),
        eta_bw=float(1.0 / (1.0 + x[2])),
        eta_kv=float(1.0 / (1.0 + x[3])),
        link_latency=float(x[4]),
        c_moe=float(x[5]),
        c_token=float(x[6]),
        c_vocab=float(x[7]),
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
        k.step_s
        + k.c0 * f[1]
        + f[2] / k.eta_bw
        + f[3] / k.eta_kv
        + link * f[4]
        + k.c_moe * f[5]
        + k.c_token * f[6]
        + k.c_vocab * f[7]
        + phi
    )


def describe(knobs: Knobs) -> str:
    link = "catalogue" if knobs.link_latency is None else f"{knobs.link_latency * 1e6:.1f} µs"
    return (
        f"step_s {knobs.step_s * 1e3:.3f} ms, c0 {knobs.c0 * 1e6:.1f} µs/layer, eta_bw {knobs.eta_bw:.3f}, "
        f"eta_kv {knobs.eta_kv:.3f}, link_latency {link}, c_moe {knobs.c_moe * 1e6:.1f} µs/MoE layer, "
        f"c_token {knobs.c_token * 1e9:.0f} ns/{TOKEN_FORM_UNIT[TOKEN_FORM]}/layer, "
        f"c_vocab {knobs.c_vocab * 1e9:.2f} ns/entry, "
        f"frontend_s {knobs.frontend_s * 1e3:.2f} ms, "
        f"eta_f {knobs.eta_f:.2f}"
    )
