"""The empirical acceptance model: resample the engine's own request-steps (acceptance.model "empirical").

Role: the same seam as `sim.acceptance.AcceptanceModel` (`request_latent`, `step`, `sample_accepted`,
`curves`, `gamma`, `report`), fed by the "samples" of a curves file that `specbed engine curves` (or
`specbed fidelity`) measured: for every engine request-step that verified all γ drafts, the confidences the
policy saw and how many drafts were accepted. A parametric model reproduces the mean curve but not the
shape of the confidence distribution a real head produces (how many tiny survivals it reports, how the
positions of one step move together), and that shape decides how many tokens a confidence-driven policy
admits. Resampling the measured steps keeps the joint law of (confidences, outcome) exactly.

Per request: `request_latent` picks one measured engine request (group) of the request's domain, so
per-request difficulty persists across the request's steps as in the engine: u ~ U[0, 1) and group
⌊u · G_d⌋ of the G_d groups of domain d (in group-id order); with `in_order`, the i-th request of domain d
takes group i mod G_d (u = (i mod G_d + ½) / G_d), replaying the prompts the samples were measured on.
Per step: a row i of that group, uniformly (truth generator) — or, with `in_order` and measured positions
(`by_position`), uniformly among the group's rows measured within ±WINDOW tokens of the request's own
position (tokens emitted so far; the nearest row when none is): difficulty runs in stretches along a
text, and a policy that takes fewer tokens per step than the all-γ measurement spends more of its steps
in the hard stretches, which a replay by step alone would weight as the measurement's steps did. The
estimate is conf[i] (what the engine's policy saw for that draft), the truth the realized outcome of
that draft: 1 for the accepted positions k < accepted[i], 0 from the first rejected one on.
`sample_accepted` on that truth gives min(accepted[i], ℓ): rejection sampling decides position k from
positions ≤ k only, so verifying fewer drafts changes nothing before ℓ. The scheduler still sees only the
estimate; outcomes still come from the truth only.

`curves`: the curves file's matrix (population curve; young requests under a stale-confidence delay pass a
row of it). Shapes: R running requests, D domains (DOMAINS order), γ draft positions (the file's may be
longer: its first γ are used).

May import: numpy, the standard library, `specsched.confidence`, `specsched.contracts` (the curves
file it reads), `sim.model`.
"""

from __future__ import annotations

import math

import numpy as np

from sim.model import sample_chain
from specsched.confidence import auc, ece, survival_labels
from specsched.contracts import DOMAINS, Samples

#: half-width (tokens) of the stretch of text a position-indexed replay draws a measured step from
WINDOW = 16


class EmpiricalModel:
    """Acceptance truth + estimate by resampling measured engine request-steps (module docstring).

    curves: float64[D, γ] (rows in DOMAINS order); samples: {domain: Samples} with ≥ γ positions each.
    A `sim.model.AcceptanceSource` (one step at a time: its rows are drawn per request-step).
    """

    vector_draws = False

    def __init__(self, curves: np.ndarray, samples: dict[str, Samples], in_order: bool = False) -> None:
        c = np.asarray(curves, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] != len(DOMAINS):
            raise ValueError(f"curves must be float64[{len(DOMAINS)}, γ], got shape {c.shape}")
        self.curves, self.gamma, self.in_order = c, c.shape[1], in_order
        self._positions = np.arange(self.gamma)
        conf, truth, starts, counts, first, ngroups, pos = [], [], [], [], [], [], []
        rows = 0
        for dom in DOMAINS:
            s = samples[dom]
            if s.conf.shape[1] < self.gamma:
                raise ValueError(
                    f"samples of {dom} have {s.conf.shape[1]} positions, fewer than γ {self.gamma}"
                )
            order = np.argsort(s.group, kind="stable")  # rows of one group contiguous, in measured order
            _, count = np.unique(s.group[order], return_counts=True)
            first.append(len(counts))
            ngroups.append(count.size)
            starts.append(rows + np.concatenate([[0], np.cumsum(count)[:-1]]))
            counts.append(count)
            conf.append(s.conf[order, : self.gamma])
            pos.append(None if s.position is None else s.position[order])
            truth.append((self._positions < s.accepted[order, None]).astype(np.float64))
            rows += order.size
        self._conf, self._truth = np.concatenate(conf), np.concatenate(truth)
        #: draw each step near the request's text position (module doc) when every domain has positions
        self.by_position = in_order and all(p is not None for p in pos)
        self._pos = np.concatenate(pos) if self.by_position else None
        self._start, self._count = np.concatenate(starts), np.concatenate(counts)
        self._first_group = np.array([sum(ngroups[:i]) for i in range(len(DOMAINS))], dtype=np.int64)
        self._groups = np.array(ngroups, dtype=np.int64)
        self._report: dict | None = None

    # ---- hot path (per engine step) ---------------------------------------------------------------------
    def request_latent(self, n: int, rng: np.random.Generator, domain_idx=None) -> np.ndarray:
        """u `float64[n]` in [0, 1): picks the request's engine group (module doc); draw once per request.
        `domain_idx: int64[n]` is needed with `in_order`."""
        if not self.in_order:
            return rng.random(n)
        if domain_idx is None:
            raise ValueError("request_latent: in_order needs the requests' domains")
        dom = np.asarray(domain_idx)
        u = np.empty(n)
        for d in range(len(DOMAINS)):
            idx = np.flatnonzero(dom == d)
            u[idx] = (np.arange(idx.size) % self._groups[d] + 0.5) / self._groups[d]
        return u

    def step(
        self,
        domain_idx: np.ndarray,
        latent: np.ndarray,
        rng_truth: np.random.Generator,
        rng_conf=None,
        position: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(truth, estimate) `float64[R, γ]`: one measured request-step per running request.

        `domain_idx: int64[R]`, `latent: float64[R]` from `request_latent`; `position: int64[R]` tokens
        each request has emitted (used when `by_position`). `rng_conf` is unused (the estimate is the
        measured confidence of the drawn step) and kept for the seam's signature.
        """
        dom = np.asarray(domain_idx)
        group = self._first_group[dom] + np.minimum(
            (np.asarray(latent) * self._groups[dom]).astype(np.int64), self._groups[dom] - 1
        )
        u = rng_truth.random(dom.size)
        if self.by_position and position is not None:
            row = self._near(self._start[group], self._count[group], np.asarray(position), u)
        else:
            row = self._start[group] + (u * self._count[group]).astype(np.int64)
        return self._truth[row], self._conf[row]

    def _near(self, start: np.ndarray, count: np.ndarray, position: np.ndarray, u: np.ndarray) -> np.ndarray:
        """int64[R]: per request, a row drawn by u among its group's rows within ±WINDOW of its position
        (rows start..start+count−1, positions ascending), or the nearest row when none is that close."""
        out = np.empty(start.size, dtype=np.int64)
        for i, (a, c, p, x) in enumerate(zip(start.tolist(), count.tolist(), position.tolist(), u.tolist())):
            pos = self._pos[a : a + c]
            lo, hi = np.searchsorted(pos, [p - WINDOW, p + WINDOW], side="left")
            hi = max(hi, int(np.searchsorted(pos, p + WINDOW, side="right")))
            if hi > lo:
                out[i] = a + lo + int(x * (hi - lo))
            else:  # the nearest measured row
                j = min(lo, c - 1)
                out[i] = a + (j - 1 if j > 0 and p - pos[j - 1] < pos[j] - p else j)
        return out

    def sample_accepted(self, true: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Accepted drafts `int64[R]` (0..ℓ_r) from the truth only (here 0/1 rows: min(measured, ℓ))."""
        return sample_chain(true, lengths, rng, self._positions)

    # ---- report -----------------------------------------------------------------------------------------
    @property
    def report(self) -> dict:
        """Confidence quality of the samples (survival ECE/AUC per position against the prefix-accepted
        label; the samples' confidences are what the engine's policy saw, so they fill the "calibrated"
        keys and the raw ones are NaN), samples and groups per domain, τ of the samples per domain."""
        if self._report is None:
            self._report = self._make_report()
        return self._report

    def _make_report(self) -> dict:
        rep: dict = {"model": "empirical", "ece_raw": math.nan, "auc_raw": math.nan}
        accepted = self._truth.sum(axis=1).astype(np.int64)
        taus, sizes = [], []
        for d in range(len(DOMAINS)):
            g0, g1 = self._first_group[d], self._first_group[d] + self._groups[d]
            lo, hi = self._start[g0], self._start[g1 - 1] + self._count[g1 - 1]
            taus.append(float(1.0 + accepted[lo:hi].mean()))
            sizes.append(int(hi - lo))
        rep["tau_samples"], rep["samples"], rep["groups"] = taus, sizes, self._groups.tolist()
        if self.gamma == 0:
            rep["ece_calibrated"] = rep["auc_calibrated"] = math.nan
            return rep
        surv = np.cumprod(self._conf, axis=1)
        labels = survival_labels(accepted, self.gamma)
        per_ece = np.asarray(ece(surv, labels), dtype=np.float64)
        per_auc = np.asarray(auc(surv, labels), dtype=np.float64)
        rep["ece_calibrated"], rep["ece_calibrated_per_position"] = float(per_ece.mean()), per_ece.tolist()
        finite = per_auc[np.isfinite(per_auc)]
        rep["auc_calibrated"] = float(finite.mean()) if finite.size else math.nan
        rep["auc_calibrated_per_position"] = per_auc.tolist()
        return rep
