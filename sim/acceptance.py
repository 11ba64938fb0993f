"""Acceptance truth and confidence estimate: the truth drives outcomes, the estimate feeds the scheduler.

Role: per engine step, `true_probs` gives each running request's TRUE conditional acceptance probabilities,
`sample_accepted` draws the verification outcome from them, and `estimate` gives the confidences the
scheduler sees (a noisy, over-confident view of the truth, optionally STS-calibrated). Outcomes never depend
on the estimate. Contract: docs/sim-acceptance-api.md.

May import: numpy, the standard library, `specsched.io.errors`, `specsched.confidence`, `sim.population`,
`sim.model`.

Truth model (logits). For a request r of domain d, at draft position k of one engine step:
    z[r, k] = θ[d, k] + u_r + ε[r, k],   c[r, k] = σ(z[r, k])
u_r ~ N(0, difficulty_sd²) once per request (`request_latent`); ε ~ N(0, step_noise_sd²) fresh per step and
position. θ is solved at construction (Newton on Gauss–Hermite quadrature over u and ε, left to right) so
that the population survival E[Π_{i≤k} c_i] equals Π_{i≤k} curve[d, i] for every k; so τ = 1 + Σ survival
of the curve when all γ are verified. The population (cfg.weighting):
- "step" (default) weights a request of latent u by 1/τ_d(u), the share of engine steps it occupies when
  output lengths do not depend on u, so that τ POOLED OVER ENGINE STEPS (Σ emitted / Σ request-steps, the
  paper's accept_len) matches the curve;
- "request" takes u ~ N(0, sd²) as is: the mean over fresh (request, step) draws matches the curve.
The two differ by ≈ 0.05–0.08 in τ at the defaults (report: tau_model_request, tau_model_step).

Estimate model. The confidence head sees a noisy signal y = z + σ_η·ξ (ξ ~ N(0, 1) per element) and reports
    ĉ = σ((1 + overconfidence) · ẑ / T_k),  ẑ = (m_k + ρ_k (y − m_k)) / √(1 + π ρ_k σ_η² / 8)
ẑ is the Gaussian posterior mean of z given y (prior N(m_k, s_k²) pooled over domains,
ρ_k = s_k²/(s_k² + σ_η²)) with the probit correction, so ĉ is roughly calibrated per position when
overconfidence = 0; overconfidence > 0 pushes confidences toward 0/1 (over-confident: most drafts are
accepted). σ_η is solved at construction so that the mean over positions of the AUC of the raw survival
estimate Π_{i≤k} ĉ_i against the prefix-accepted label equals cfg.auc on held-out samples (σ_η = 0 if the
truth itself does not reach it). T_k: STS temperatures (all 1 unless cfg.sts). With σ_η = 0,
overconfidence = 0 and no STS, `estimate` returns the truth.

Held-out samples (a "fit" set for σ_η and STS, a separate larger "eval" set for `report`) are step-samples of
the population above, the D domains mixed equally, all γ positions verified.
Shapes: R running requests, D domains (rows of `curves`, DOMAINS order), γ draft positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from sim.model import sample_chain
from sim.population import (
    GH_E,
    gauss_nodes,
    mean_accept,
    population_tau,
    sigmoid,
    solve_offsets,
)
from specsched.confidence import auc_binned, fit_sts, survival_labels
from specsched.confidence import ece as _ece
from specsched.io.errors import InputError

_LATENT_GRID = 513  # grid (±8 sd) for sampling the step-weighted latent by inverse CDF
_AUC_LO, _AUC_BINS = -20.0, 4096  # log-survival bins on [-20, 0] for the fast AUC (survival < 2e-9 ~ 0)
_STS_COARSE = np.geomspace(0.25, 8.0, 16)  # STS grid (times 1 + overconfidence, plus 1.0), ...
_STS_REFINE = 8  # ... refined by 8 points between the best's neighbours
_REPORT_FACTOR = 8  # `report` evaluates on 8 × sts_samples fresh samples (ECE noise floor ≈ 0.6% at 32768)
WEIGHTINGS = ("step", "request")
MODELS = ("parametric", "empirical")
GROUPS = ("random", "in_order")


@dataclass(frozen=True)
class AcceptanceConfig:
    """Knobs of the truth and estimate models (defaults reproduce the paper's Fig. 6 ranges; see `report`).

    difficulty_sd: sd (logits) of the per-request latent. step_noise_sd: sd (logits) of the per-step,
    per-position noise. auc: target mean AUC of the raw estimate's survival, in (0.5, 1] (1 = as good as the
    truth). overconfidence: logit scale − 1 of the raw estimate (0 = roughly calibrated). sts: calibrate with
    STS. sts_samples: held-out step-samples for the σ_η and STS fits (and again for `report`). weighting:
    "step" or "request", the population whose τ matches the curve (module docstring). model: "parametric"
    (this module's truth and estimate) or "empirical" (`sim.empirical`: replay measured engine
    request-steps from the curves file's samples). groups (empirical only): "random" (each request draws
    one measured group of its domain) or "in_order" (the i-th request of a domain replays its i-th group,
    as `specbed fidelity` pairs engine and simulator requests).
    """

    difficulty_sd: float = 0.5
    step_noise_sd: float = 2.5
    auc: float = 0.85
    overconfidence: float = 0.4
    sts: bool = True
    sts_samples: int = 4096
    weighting: str = "step"
    model: str = "parametric"
    groups: str = "random"

    def __post_init__(self) -> None:
        for f in fields(self):
            v, name = getattr(self, f.name), f"acceptance.{f.name}"
            if f.name in ("model", "groups"):
                allowed = MODELS if f.name == "model" else GROUPS
                if v not in allowed:
                    raise InputError(f"must be one of {', '.join(allowed)}, got {v!r}", field=name)
            elif f.name == "sts":
                if not isinstance(v, bool | np.bool_):
                    raise InputError(f"must be true or false, got {v!r}", field=name)
            elif f.name == "weighting":
                if v not in WEIGHTINGS:
                    raise InputError(f"must be one of {', '.join(WEIGHTINGS)}, got {v!r}", field=name)
            elif f.name == "sts_samples":
                if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 64 <= v <= 10_000_000:
                    raise InputError(f"must be an integer in [64, 10000000], got {v!r}", field=name)
            elif isinstance(v, bool) or not isinstance(v, int | float | np.number) or not math.isfinite(v):
                raise InputError(f"must be a finite number, got {v!r}", field=name)
        for name, lo, hi, lo_open in (
            ("difficulty_sd", 0.0, 10.0, False),
            ("step_noise_sd", 0.0, 10.0, False),
            ("auc", 0.5, 1.0, True),
            ("overconfidence", -0.9, 10.0, False),
        ):
            v = getattr(self, name)
            if v > hi or v < lo or (lo_open and v == lo):
                span = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
                raise InputError(f"must be in {span}, got {v!r}", field=f"acceptance.{name}")


class AcceptanceModel:
    """Truth + estimate model over `curves: float64[D, γ]` (conditional acceptance, rows in DOMAINS order).

    The constructor solves θ, draws held-out samples from `rng` to solve σ_η and (if cfg.sts) to fit STS, and
    keeps a child generator for the lazily computed `report`. Hot-path methods are vectorized over R and take
    their own generator (the caller keeps separate streams for truth and estimate noise). It is a
    `sim.model.VectorModel`: the simulator draws K steps of it at once.
    """

    vector_draws = True  # `sim.model.AcceptanceSource`: offers draw_steps / accept_steps / unget_steps
    by_position = False

    def __init__(self, curves: np.ndarray, cfg: AcceptanceConfig, rng: np.random.Generator) -> None:
        c = np.asarray(curves, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] < 1:
            raise ValueError(f"curves must be float64[D, γ] with D >= 1, got shape {c.shape}")
        if np.any(~((c >= 0.0) & (c <= 1.0))):
            raise ValueError("curves must lie in [0, 1]")
        self.curves, self.cfg, self.gamma = c, cfg, c.shape[1]
        self.theta = solve_offsets(c, cfg.difficulty_sd, cfg.step_noise_sd, cfg.weighting)
        # Pooled (equal domain mix) Gaussian prior of z per position, for the estimate's shrinkage.
        self._m = self.theta.mean(axis=0)
        self._s2 = cfg.difficulty_sd**2 + cfg.step_noise_sd**2 + self.theta.var(axis=0)
        self._positions = np.arange(self.gamma)
        self._report_rng = rng.spawn(1)[0]
        self._report: dict | None = None
        self._latent_cdf = self._step_latent_cdf() if cfg.weighting == "step" else None
        self.noise_sd = 0.0
        self.temperatures = np.ones(self.gamma)
        self._fit_ece = (math.nan, math.nan)  # survival ECE on the STS fitting samples, before and after
        if self.gamma > 0:
            fit = self._held_out(cfg.sts_samples, rng)
            self.noise_sd = self._solve_noise(fit)
            if cfg.sts:
                raw = self._estimate_logits(fit, self.noise_sd, self.temperatures)
                grid = np.union1d((1.0 + cfg.overconfidence) * _STS_COARSE, [1.0])
                self.temperatures = fit_sts(raw, fit["acc"], grid, logits=True, refine=_STS_REFINE)
                labels = survival_labels(fit["acc"], self.gamma)
                self._fit_ece = tuple(
                    float(np.mean(_ece(np.exp(_log_survival(z)), labels)))
                    for z in (raw, self._estimate_logits(fit, self.noise_sd, self.temperatures))
                )
        self._a, self._b = self._coeffs(self.noise_sd, self.temperatures)
        self._a_over_b = -self._a / self._b  # b > 0 always
        self._neg_sd_e = -float(cfg.step_noise_sd)
        self._identity = (
            self.noise_sd == 0 and cfg.overconfidence == 0 and bool(np.all(self.temperatures == 1))
        )

    # ---- hot path (per engine step) ---------------------------------------------------------------------
    def request_latent(self, n: int, rng: np.random.Generator, domain_idx=None) -> np.ndarray:
        """Per-request latent difficulty `float64[n]` (logits, higher = easier); draw once per request.
        `domain_idx` is unused (the seam's signature)."""
        return rng.normal(0.0, self.cfg.difficulty_sd, n)

    def true_probs(self, domain_idx: np.ndarray, latent: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """True conditional acceptance `float64[R, γ]` for this step (fresh per-step noise).

        `domain_idx: int64[R]` rows of `curves`; `latent: float64[R]` from `request_latent`.
        """
        z = rng.standard_normal((len(domain_idx), self.gamma))
        z *= self._neg_sd_e
        z -= np.take(self.theta, domain_idx, axis=0)
        z -= np.asarray(latent)[:, None]
        np.exp(z, out=z)  # exp(-(θ + u + ε)), the sign of ε being irrelevant
        z += 1.0
        return np.reciprocal(z, out=z)

    def step(
        self, domain_idx: np.ndarray, latent: np.ndarray, rng_truth: np.random.Generator, rng_conf
    ) -> tuple[np.ndarray, np.ndarray]:
        """(truth, estimate) `float64[R, γ]` for one engine step: `true_probs` then `estimate` of it."""
        true = self.true_probs(domain_idx, latent, rng_truth)
        return true, self.estimate(true, rng_conf)

    # ---- hot path of the simulator: k steps at once, in logits --------------------------------------------
    # The same model as `step` + `sample_accepted`, with fewer passes: the truth stays a negative logit
    # w = −(θ + u + ε) (σ(−w) is the acceptance probability), the estimate is taken from w directly (no
    # log of a probability), and a draft is accepted when a standard logistic draw L (one uniform each)
    # exceeds w: P(L > w) = σ(−w). Each stream is drawn step after step, so k steps at once draw exactly
    # what k one-step calls would. The caller sets np.errstate(over="ignore") (`sim.run` does, once).

    def offsets(self, domain_idx: np.ndarray, latent: np.ndarray) -> np.ndarray:
        """θ[d] + u `float64[R, γ]`: the fixed part of each request's truth logits (a server keeps them per
        slot while the batch does not change, and passes them to `draw_steps`)."""
        return np.take(self.theta, domain_idx, axis=0) + np.asarray(latent)[:, None]

    def draw_steps(
        self, domain_idx: np.ndarray, latent: np.ndarray, k: int, rng_truth, rng_conf, offsets=None
    ):
        """(w, conf) `float64[k, R, γ]`: truth as negative logits and the scheduler's confidences.
        `offsets`: `self.offsets(domain_idx, latent)` when the caller has it (the same numbers)."""
        # The raw draws are left untouched (first operation out of place): a stream that can give draws
        # back (`sim.steps.NormalStream`) may hand them out again.
        w = np.multiply(rng_truth.standard_normal((k, len(domain_idx), self.gamma)), self._neg_sd_e)
        w -= self.offsets(domain_idx, latent) if offsets is None else offsets
        if self._identity:
            conf = np.exp(w)
        else:
            conf = np.multiply(rng_conf.standard_normal(w.shape), self.noise_sd)
            conf += w
            conf += self._a_over_b  # −(a + b·(z + σ_η ξ)) = b·(w − a/b − σ_η ξ), ξ symmetric
            conf *= self._b
            np.exp(conf, out=conf)
        conf += 1.0
        return w, np.reciprocal(conf, out=conf)

    def unget_steps(self, keep: int, rng_truth, rng_conf) -> None:
        """Give back the draws of the last `draw_steps` past its first `keep` steps (both streams are
        `sim.steps.NormalStream`s): the next draws start with them, as if they had never been drawn."""
        rng_truth.unget(keep)
        if not self._identity:
            rng_conf.unget(keep)

    def accept_steps(self, w: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Accepted drafts `int64[k, R]` from `draw_steps`'s w and the verify lengths `int64[k, R]`: the first
        position whose logistic draw is ≤ w, capped at the length. One uniform per position (a draw of
        exactly 0.0, p = 2⁻⁵³, is redrawn by numpy: the one case where `advance` bookkeeping is off)."""
        gamma = w.shape[-1]
        stop = np.empty((*w.shape[:-1], gamma + 1), dtype=bool)
        np.less_equal(rng.logistic(size=w.shape), w, out=stop[..., :gamma])
        stop[..., gamma] = True
        return np.minimum(stop.argmax(axis=-1), lengths)

    def estimate(self, true: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Scheduler-visible confidences `float64[R, γ]` in [0, 1] from `true: float64[R, γ]` (module doc)."""
        if self._identity:
            return np.array(true, dtype=np.float64)
        p = np.asarray(true, dtype=np.float64)
        y = rng.standard_normal(p.shape)
        y *= self.noise_sd
        with np.errstate(divide="ignore", over="ignore"):  # p = 1 -> -inf -> 1, p = 0 -> +inf -> 0
            lq = np.subtract(1.0, p)
            np.divide(lq, p, out=lq)
            np.log(lq, out=lq)  # -logit(p)
            y += lq
            y += self._a_over_b  # -(a + b·(logit(p) + σ_η ξ)) = b·(−logit(p) − σ_η ξ − a/b), ξ symmetric
            y *= self._b
            np.exp(y, out=y)
        y += 1.0
        return np.reciprocal(y, out=y)

    def sample_accepted(self, true: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Accepted drafts `int64[R]` (0..ℓ_r): a Bernoulli chain on `true: float64[R, γ]`, the truth only.

        `lengths: int64[R]` drafts verified per request (values above γ act as γ, below 0 as 0).
        """
        return sample_chain(true, lengths, rng, self._positions)

    # ---- construction helpers ---------------------------------------------------------------------------
    def _coeffs(self, noise_sd: float, temps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a, b) `float64[γ]`: shrinkage, probit correction, over-confidence, STS folded; ĉ = σ(a + b·y)."""
        s2 = np.maximum(self._s2, 1e-12)
        rho = s2 / (s2 + noise_sd**2)
        scale = (1.0 + self.cfg.overconfidence) / np.sqrt(1.0 + math.pi * rho * noise_sd**2 / 8.0) / temps
        return scale * (1.0 - rho) * self._m, scale * rho

    def _estimate_logits(self, s: dict[str, np.ndarray], noise_sd: float, temps: np.ndarray) -> np.ndarray:
        """Estimate logits `float64[N, γ]` of held-out samples `s` (true logits z, estimate noise xi)."""
        a, b = self._coeffs(noise_sd, temps)
        return a + b * (s["z"] + noise_sd * s["xi"])

    def _step_latent_cdf(self) -> tuple[np.ndarray, np.ndarray]:
        """Grid `u: [G]` and CDF `[D, G]` of the step-weighted latent density ∝ φ(u)/τ_d(u)."""
        sd = self.cfg.difficulty_sd
        u = np.linspace(-8.0, 8.0, _LATENT_GRID) * sd
        if sd == 0 or self.gamma == 0:
            return u, np.broadcast_to(np.linspace(0.0, 1.0, u.size), (self.curves.shape[0], u.size))
        xe, we = gauss_nodes(GH_E, self.cfg.step_noise_sd)
        tau = 1.0 + np.cumprod(mean_accept(self.theta, u, xe, we), axis=1).sum(axis=1)  # [D, G]
        cdf = np.cumsum(np.exp(-0.5 * (u / sd) ** 2) / tau, axis=1)
        return u, (cdf - cdf[:, :1]) / (cdf[:, -1:] - cdf[:, :1])

    def _held_out(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """n step-samples, domains mixed equally: true logits z, probs, accepted length, estimate noise xi."""
        d = self.curves.shape[0]
        dom = np.arange(n) % d
        if self._latent_cdf is None:
            lat = self.request_latent(n, rng)
        else:
            grid, cdf = self._latent_cdf
            q = rng.random(n)
            lat = np.empty(n)
            for i in range(d):
                lat[dom == i] = np.interp(q[dom == i], cdf[i], grid)
        z = self.theta[dom] + lat[:, None] + self.cfg.step_noise_sd * rng.standard_normal((n, self.gamma))
        true = sigmoid(z)
        acc = self.sample_accepted(true, np.full(n, self.gamma), rng)
        return {"z": z, "true": true, "acc": acc, "xi": rng.standard_normal((n, self.gamma))}

    def _solve_noise(self, fit: dict[str, np.ndarray]) -> float:
        """σ_η giving the target mean AUC of the raw survival estimate on the fit samples (0: unreachable)."""
        labels = survival_labels(fit["acc"], self.gamma)
        ones = np.ones(self.gamma)

        def gap(log_sd: float) -> float:
            zh = self._estimate_logits(fit, math.exp(log_sd) if log_sd > -50 else 0.0, ones)
            log_surv = _log_survival(zh)
            return _mean(auc_binned(log_surv, labels, lo=_AUC_LO, hi=0.0, bins=_AUC_BINS)) - self.cfg.auc

        top = gap(-100.0)
        if not top > 0:  # the truth itself does not beat the target (or no labels of both kinds): no noise
            return 0.0
        lo, hi = math.log(1e-3), math.log(50.0)
        f_lo, f_hi = gap(lo), gap(hi)
        if f_lo <= 0 or f_hi >= 0:
            return math.exp(lo if f_lo <= 0 else hi)
        for _ in range(40):  # Illinois false position on log σ_η (the AUC falls as σ_η grows)
            x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            fx = gap(x)
            if abs(fx) < 2e-4 or hi - lo < 1e-6:
                return math.exp(x)
            if (fx > 0) == (f_lo > 0):
                lo, f_lo, f_hi = x, fx, 0.5 * f_hi
            else:
                hi, f_hi, f_lo = x, fx, 0.5 * f_lo
        return math.exp(0.5 * (lo + hi))

    # ---- report -----------------------------------------------------------------------------------------
    @property
    def report(self) -> dict:
        """Confidence quality on fresh held-out samples, computed on first access (own child generator).

        ece_raw, ece_calibrated, auc_raw, auc_calibrated: means over positions of the survival ECE (15 bins)
        and AUC against the prefix-accepted label; `<key>_per_position`: lists. auc_truth(_per_position): the
        truth's own survival AUC (the ceiling). sts_fit_ece_raw / sts_fit_ece_calibrated: the same mean ECE
        on the STS fitting samples (NaN without STS). temperatures (STS, all 1 without), noise_sd (σ_η),
        auc_target, samples, weighting, tau_curve and tau_model (per domain row; tau_model by quadrature
        over the configured population; tau_model_request / tau_model_step: both). γ = 0: metrics NaN.
        """
        if self._report is None:
            self._report = self._make_report()
        return self._report

    def _make_report(self) -> dict:
        sd_u, sd_e = self.cfg.difficulty_sd, self.cfg.step_noise_sd
        rep: dict = {
            "temperatures": self.temperatures.tolist(),
            "sts_fit_ece_raw": self._fit_ece[0],
            "sts_fit_ece_calibrated": self._fit_ece[1],
            "noise_sd": self.noise_sd,
            "auc_target": self.cfg.auc,
            "samples": self.cfg.sts_samples,
            "weighting": self.cfg.weighting,
            "tau_curve": (1.0 + np.cumprod(self.curves, axis=1).sum(axis=1)).tolist(),
            "tau_model": population_tau(self.theta, sd_u, sd_e, self.cfg.weighting).tolist(),
            "tau_model_request": population_tau(self.theta, sd_u, sd_e, "request").tolist(),
            "tau_model_step": population_tau(self.theta, sd_u, sd_e, "step").tolist(),
        }
        if self.gamma == 0:
            for key in ("ece_raw", "ece_calibrated", "auc_raw", "auc_calibrated", "auc_truth"):
                rep[key], rep[key + "_per_position"] = math.nan, []
            return rep
        ev = self._held_out(_REPORT_FACTOR * self.cfg.sts_samples, self._report_rng)
        labels = survival_labels(ev["acc"], self.gamma)
        ones = np.ones(self.gamma)
        for name, z in (
            ("raw", self._estimate_logits(ev, self.noise_sd, ones)),
            ("calibrated", self._estimate_logits(ev, self.noise_sd, self.temperatures)),
            ("truth", ev["z"]),
        ):
            log_surv = _log_survival(z)
            per_auc = auc_binned(log_surv, labels, lo=_AUC_LO, hi=0.0, bins=_AUC_BINS)
            rep[f"auc_{name}"], rep[f"auc_{name}_per_position"] = _mean(per_auc), per_auc.tolist()
            if name != "truth":
                per_ece = np.asarray(_ece(np.exp(log_surv), labels))
                rep[f"ece_{name}"], rep[f"ece_{name}_per_position"] = float(per_ece.mean()), per_ece.tolist()
        return rep


def _mean(x: np.ndarray) -> float:
    """Mean of the finite entries (AUC is NaN where a position has one class only); NaN if none."""
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan


def _log_survival(z: np.ndarray) -> np.ndarray:
    """log Π_{i≤k} σ(z_i) `float64[N, γ]` from logits `z: float64[N, γ]`."""
    with np.errstate(over="ignore"):
        return np.cumsum(-np.log1p(np.exp(-z)), axis=1)
