"""µs per call of the acceptance model's hot path (true_probs, estimate, sample_accepted) and its set-up cost.

Goal (issue 3, sim-acceptance brief): ≲ 30 µs per call at R = 128, γ = 7 (the simulator calls each once per
engine step); constructor ≲ 50 ms. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import numpy as np

from bench.timing import per_call_us
from sim.acceptance import AcceptanceConfig, AcceptanceModel
from sim.curves import curve_matrix

SIZES = (16, 128, 1024)
GAMMA = 7


def main() -> None:
    seeds = np.random.SeedSequence(2026).spawn(4)
    build, truth, est, outcome = (np.random.default_rng(s) for s in seeds)
    curves = curve_matrix(None, "dspark", GAMMA)
    cfg = AcceptanceConfig()
    model = AcceptanceModel(curves, cfg, build)  # first build pays one-off imports and caches
    ctor = per_call_us(lambda: AcceptanceModel(curves, cfg, build), min_seconds=0.5) / 1e3
    ctor_nosts = per_call_us(lambda: AcceptanceModel(curves, AcceptanceConfig(sts=False), build), 0.5) / 1e3
    report = per_call_us(lambda: AcceptanceModel(curves, cfg, build).report, min_seconds=0.5) / 1e3 - ctor
    print(f"constructor (dspark, γ={GAMMA}, defaults): {ctor:.1f} ms with STS, {ctor_nosts:.1f} ms without;")
    print(f"report (lazy, first access): {report:.1f} ms")
    print(f"µs per call, γ = {GAMMA}")
    print(f"{'R':>6} {'true_probs':>11} {'estimate':>11} {'sample_acc':>11} {'all three':>11}")
    for r in SIZES:
        dom = np.arange(r) % 3
        lat = model.request_latent(r, truth)
        p = model.true_probs(dom, lat, truth)
        lengths = np.full(r, GAMMA)
        t1 = per_call_us(lambda dom=dom, lat=lat: model.true_probs(dom, lat, truth))
        t2 = per_call_us(lambda p=p: model.estimate(p, est))
        t3 = per_call_us(lambda p=p, lengths=lengths: model.sample_accepted(p, lengths, outcome))
        print(f"{r:>6} {t1:11.1f} {t2:11.1f} {t3:11.1f} {t1 + t2 + t3:11.1f}")
    empirical(truth, outcome)


def empirical(truth: np.random.Generator, outcome: np.random.Generator) -> None:
    """The empirical model (acceptance.model "empirical"): one step = a row draw + sample_accepted."""
    from sim.curves import DOMAINS, Samples
    from sim.empirical import EmpiricalModel

    rows, groups = 4096, 64
    bank = {}
    for d in DOMAINS:
        conf = truth.uniform(0.2, 1.0, (rows, GAMMA))
        bank[d] = Samples(conf, truth.integers(0, GAMMA + 1, rows), truth.integers(0, groups, rows))
    curves = curve_matrix(None, "dspark", GAMMA)
    ctor = per_call_us(lambda: EmpiricalModel(curves, bank), min_seconds=0.3) / 1e3
    model = EmpiricalModel(curves, bank)
    print(f"empirical model ({rows} samples x 3 domains, {groups} groups each): constructor {ctor:.1f} ms")
    print(f"{'R':>6} {'step':>11} {'sample_acc':>11} {'both':>11}")
    for r in SIZES:
        dom = np.arange(r) % 3
        lat = model.request_latent(r, truth)
        p, _ = model.step(dom, lat, truth, None)
        lengths = np.full(r, GAMMA)
        t1 = per_call_us(lambda dom=dom, lat=lat: model.step(dom, lat, truth, None))
        t2 = per_call_us(lambda p=p, lengths=lengths: model.sample_accepted(p, lengths, outcome))
        print(f"{r:>6} {t1:11.1f} {t2:11.1f} {t1 + t2:11.1f}")
