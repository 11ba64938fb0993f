"""The losslessness suite behind `specbed verify`: each property on a fixed, seeded set of cases.

Role: a fast (< ~60 s) end-to-end run of the same checks tests/engine runs under hypothesis, for a user to
see on their machine: exact enumeration (plain, after sampling transforms, under scheduler policies with
stale confidences), detection of biased schedulers and of the negative controls, Triton = torch parity,
per-position χ², coupled-mode and batch invariance of the real decode loop, and clear errors on bad rows.
Case generators here (`random_case`, `random_cost`) draw from a numpy Generator; the tests build the same
objects from hypothesis strategies.

May import: torch, numpy, stdlib, specsched, engine.*.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import torch

import specsched
from engine.proof.batch import control_verdicts, policy_verdicts
from engine.proof.controls import EXACT_CONTROLS, SHARED_DRAFT_NOISE
from engine.proof.exact import (
    DRAFT_KINDS,
    ToyCase,
    ToyModel,
    build_case,
    case_gap,
    emitted_law,
    policy_plan,
    random_weights,
)
from engine.proof.stats import chi2_positions, chi2_threshold, joint_step_chi2
from engine.proof.table import Row, format_table
from engine.sampling import SamplingParams
from specsched.registry import specs

CONF_VALUES = (0.0, 0.2, 0.5, 0.8, 0.95, 1.0)


def random_params(rng: np.random.Generator, vocab: int) -> SamplingParams:
    temp = [0.0, 1.0, 0.5, 1 / 3][int(rng.integers(4))]
    return SamplingParams(temp, int(rng.integers(0, vocab + 1)), [1.0, 0.9, 0.75, 0.5][int(rng.integers(4))])


def random_case(rng: np.random.Generator, *, transforms: bool = False) -> ToyCase:
    """V in 2..4, γ in 1..3, up to 4 tokens (kept small enough to enumerate in milliseconds)."""
    vocab = int(rng.integers(2, 5))
    gamma = int(rng.integers(1, 4 if vocab <= 3 else 3))
    length = int(rng.integers(1, 5 if vocab <= 3 else 4))
    return build_case(
        random_weights(rng, vocab, int(rng.integers(1, 5))),
        DRAFT_KINDS[int(rng.integers(len(DRAFT_KINDS)))],
        random_weights(rng, vocab, int(rng.integers(1, 4))),
        [CONF_VALUES[int(i)] for i in rng.integers(0, len(CONF_VALUES), int(rng.integers(1, 4)))],
        gamma=gamma,
        length=length,
        salt=int(rng.integers(1000)),
        params=random_params(rng, vocab) if transforms else None,
    )


def random_cost(rng: np.random.Generator, gamma: int) -> specsched.CostTable:
    """Step latencies over B = 1..γ+1 with random increments (some flat, some steep), so policies mix
    ℓ = 0, partial and full verification."""
    steps = rng.choice([0.0, 0.05, 0.3, 1.0], size=gamma + 1)
    return specsched.CostTable.from_points(np.arange(1, gamma + 2), 1.0 + np.cumsum(steps))


def appendix_a(plan_name: str | Callable) -> Fraction:
    """P(first token = A) in the paper's Appendix A: p_t = (0.7, 0.3), p_d = (0.5, 0.5), γ = 2, c1 = 0.8,
    c2 = 0.9 if x1 = A else 0, SPS = {1: 1.0, 2: 0.5, 3: 0.45}. 0.70 when lossless, 0.85 with lookahead."""
    target = ToyModel(((Fraction(7, 10), Fraction(3, 10)),))
    draft = ToyModel(((Fraction(1, 2), Fraction(1, 2)),))

    def conf(ctx):
        return 0.8 if not ctx else (0.9 if ctx[-1] == 0 else 0.0)

    if callable(plan_name):
        plan, delay = plan_name, 0
    else:
        policy = specsched.make_policy(plan_name)
        cost = specsched.CostTable.from_points([1, 2, 3], [1.0, 2.0, 1 / 0.45])
        plan, delay = policy_plan(policy, cost), policy.delay
    law = emitted_law([target], [draft], conf, plan, length=3, gamma=2, delay=delay)
    return sum((w for k, w in law.items() if k[0][0] == 0), Fraction(0))


def peeking_plan(conf, stale, drafts) -> list[int]:
    """A scheduler that looks at the token it admits: verify draft 1 only if it is token 0."""
    return [1 if d and d[0] == 0 else 0 for d in drafts]


def _exact_rows(rng: np.random.Generator, n: int) -> Iterator[Row]:
    plain = [random_case(rng) for _ in range(n)]
    trans = [random_case(rng, transforms=True) for _ in range(n)]
    cost0 = specsched.builtin_cost("h200-dense8b")
    plans = [
        policy_plan(specsched.make_policy(p, **kw), cost0)
        for p, kw in [("fixed", {"k": 3}), ("threshold", {"threshold": 0.5}), ("fixed", {"k": 1})]
    ]
    gaps = [case_gap(c, plans[i % len(plans)]) for i, c in enumerate(plain)]
    yield Row("exact law = target law (Fraction enumeration)", n, max(gaps) == 0, f"max TV {max(gaps):.3g}")
    gaps = [case_gap(c, plans[i % len(plans)]) for i, c in enumerate(trans)]
    yield Row("exact law after temperature/top-k/top-p", n, max(gaps) == 0, f"max TV {max(gaps):.3g}")
    worst, tried = 0.0, 0
    claimed = [n for n, spec in specs().items() if not spec.control]  # every registered lossless claim
    for i, case in enumerate(plain + trans):
        cost = random_cost(rng, case.gamma)
        policy = specsched.make_policy(claimed[i % len(claimed)])
        worst = max(worst, case_gap(case, policy_plan(policy, cost), delay=policy.delay))
        tried += 1
    yield Row("firewall: every registered policy, 1 request, exact", tried, worst == 0, f"max TV {worst:.3g}")
    p_look, p_peek, p_ds = appendix_a("lookahead"), appendix_a(peeking_plan), appendix_a("dspark")
    ok = p_look == Fraction(17, 20) and p_peek != Fraction(7, 10) and p_ds == Fraction(7, 10)
    detail = f"P(A): lookahead {float(p_look):.2f}, peeking {float(p_peek):.2f}, dspark {float(p_ds):.2f}"
    yield Row("firewall: lookahead & peeking detected biased (App. A)", 3, ok, detail)
    control_cases = [build_case([[2, 2, 1]], "independent", [[0, 1, 4]], [0.5], gamma=1, length=2)]
    control_cases += plain
    for name, step in EXACT_CONTROLS.items():
        caught = sum(case_gap(c, plans[0], step=step) > 0 for c in control_cases)
        yield Row(f"control caught: {name}", len(control_cases), caught > 0, f"biased in {caught} cases")


def _batch_rows(quick: bool) -> Iterator[Row]:
    """Losslessness across the batch (engine.proof.batch): which registered policies passed, and the
    negative controls caught by random batch cases alone."""
    for name, (ok, cases, detail) in policy_verdicts(quick).items():
        yield Row(f"lossless at batch 2: {name}", cases, ok, detail)
    for name, (caught, seeds) in control_verdicts(quick).items():
        yield Row(f"control caught (batch): {name}", seeds, caught == seeds, f"in {caught} of {seeds} seeds")


def _chi2_rows(backend: str, trials: int, seeds: tuple[int, ...]) -> Iterator[Row]:
    worst, n = 0.0, 0
    for seed in seeds:
        for res in chi2_positions(seed, trials=trials, backend=backend):
            worst = max(worst, res.chi2 / chi2_threshold(res.df))
            n += 1
    yield Row(
        f"χ² per position (V=16, {trials // 1000}k trials, adversarial) [{backend}]",
        n,
        worst <= 1,
        f"max χ²/threshold {worst:.2f}",
    )
    worst = max(
        stat / chi2_threshold(df)
        for stat, df in (joint_step_chi2(s, trials=trials, backend=backend) for s in seeds[:2])
    )
    yield Row(
        f"χ² joint law of a verify step = exact step law (V=3, γ=2) [{backend}]",
        min(len(seeds), 2),
        worst <= 1,
        f"max χ²/threshold {worst:.2f}",
    )
    res = chi2_positions(seeds[0], trials=trials, backend=backend, control=SHARED_DRAFT_NOISE)
    ratio = max(r.chi2 / chi2_threshold(r.df) for r in res)
    yield Row(
        "control caught: shared draft/residual noise (χ²)", len(res), ratio > 1, f"χ²/threshold {ratio:.1f}"
    )


def _device_backend(backend: str) -> tuple[str, str]:
    """(device, χ² backend): the Triton interpreter is too slow for 200k programs, so on CPU the χ² runs on
    the torch reference and Triton is covered by the bit-exact parity row."""
    if backend == "triton" and torch.cuda.is_available():
        return "cuda", "triton"
    return "cpu", "torch"


def run_suite(
    backend: str = "torch", *, quick: bool = False, seed: int = 20240611, progress: bool = False
) -> list[Row]:
    """Every property; `quick` shrinks the case counts (for the test of the CLI itself). `progress`: one
    line per section on stderr with the elapsed time and an ETA."""
    from engine.proof.suite_engine import engine_rows, error_rows, parity_rows
    from engine.proof.tree_suite import tree_rows  # it imports this module's case helpers

    rng = np.random.default_rng(np.random.SeedSequence(seed))
    device, chi_backend = _device_backend(backend)
    sections = [
        ("exact enumeration", lambda: _exact_rows(rng, 8 if quick else 40)),
        ("batch losslessness", lambda: _batch_rows(quick)),
    ]
    if backend == "triton":
        sections.append(("triton parity", lambda: parity_rows(rng, device, 4 if quick else 24)))
    trials, seeds = (20_000, (0,)) if quick else (200_000, (0, 1, 2))
    sections += [
        ("χ² sampling", lambda: _chi2_rows(chi_backend, trials, seeds)),
        ("decode loop", lambda: engine_rows(backend, quick=quick)),
        ("bad rows", lambda: error_rows(backend)),
        # own stream (a child of the seed): adding the tree rows leaves every earlier row's draws as they were
        ("trees", lambda: tree_rows(np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0]), quick)),
    ]
    rows: list[Row] = []
    started = time.perf_counter()
    for i, (name, section) in enumerate(sections):
        rows += section()
        if progress:
            spent = time.perf_counter() - started
            eta = spent / (i + 1) * (len(sections) - i - 1)
            print(
                f"[verify] {i + 1}/{len(sections)} {name} done ({spent:.0f} s, ETA {eta:.0f} s)",
                file=sys.stderr,
            )
    return rows


def main_table(backend: str, quick: bool) -> tuple[str, bool]:
    started = time.perf_counter()
    rows = run_suite(backend, quick=quick, progress=True)
    return format_table(rows, time.perf_counter() - started), all(r.ok for r in rows)
