"""Losslessness across the batch: exact enumeration over batches of ≥ 2 requests, and the firewall.

Role: the single-request cases of engine.proof.exact never let one request's decision read another's
drafts. Here every case holds R = 2 requests (or 3), each with its own prefix-dependent target and draft
(`ToyModel`s with their own salts and prompts), confidences that depend on the realized drafts, and a cost
table over B = R..R(γ+1) drawn to make decisions marginal (plateaus and jumps, as vLLM's padded steps), so
that a policy's verify lengths for one request can depend on every request's confidences. `batch_gap`
enumerates the joint law of everything the batch emits in Fractions and compares it with the product of
the targets' laws: 0 exactly when lossless.

- `firewall_violation(policy, rng)`: the Appendix A firewall as a property of the plan alone, checked on
  every registered policy: whether request r verifies its position i (ℓ_r ≥ i) must not change when
  conf[r, i:] (which depends on the drafts it would admit) changes; random batches, jagged and padded
  tables. Stale rows, fixed before the step, are held fixed.
- `peek_partner`: the cross-request negative control. Each request verifies all γ drafts if its partner's
  (the next request's) confidence at position 1 is ≥ 1/2, else none: it never reads its own drafts, but its
  partner's, which the partner verifies in turn — the two decisions then correlate with each other's
  emitted tokens and the joint law is no longer the product of the targets'.
- `prove(policy_or_plan, seeds, cases)`: the random batch cases per seed; the count of seeds in which a
  gap was found (a lossy plan must be caught in every seed; a lossless one in none).

May import: numpy, stdlib, specsched, engine.proof.exact.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import specsched
from engine.proof.exact import ToyModel, emitted_law, law_gap, policy_plan, target_law

#: confidence values a toy confidence head picks from (zeros kill a request's survival, ones tie)
CONF_VALUES = (0.0, 0.2, 0.5, 0.8, 0.9, 1.0)
#: the first draft's confidence, one per request
FIRSTS = (0.2, 0.5, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class BatchCase:
    """R requests decoded together: target/draft models per request, one confidence head (its value depends
    on the request's own context, prompt included), γ, tokens per request, prompts, the cost table."""

    targets: tuple
    drafts: tuple
    conf: TokenConf
    gamma: int
    length: int
    prompts: tuple[tuple[int, ...], ...]
    cost: specsched.CostTable


def _weights(rng: np.random.Generator, vocab: int, rows: int) -> list[list[int]]:
    out = []
    for _ in range(rows):
        w = [int(x) for x in rng.integers(0, 4, vocab)]
        w[int(rng.integers(vocab))] += 1  # never all zero
        out.append(w)
    return out


@dataclass(frozen=True)
class TokenConf:
    """A confidence head: a request's first draft gets `firsts[prompt]` (one per request, so the batch's
    survivals differ), every later one `values[last token]` — distinct values, so the confidence of draft
    j + 1 always depends on the token drafted at j, as a real head's does (and as a biased scheduler needs
    to be seen)."""

    firsts: tuple[float, ...]
    values: tuple[float, ...]

    def __call__(self, ctx) -> float:
        if len(ctx) <= 1:
            return self.firsts[ctx[0] % len(self.firsts)] if ctx else self.firsts[0]
        return self.values[ctx[-1] % len(self.values)]


def batch_cost(rng: np.random.Generator, requests: int, gamma: int) -> specsched.CostTable:
    """Latency over B = 1..R(γ+1): flat to R, then a staircase — buckets of 1..4 tokens, each a jump of
    0.1..1.2 × the base step (vLLM's padded steps; a dear first token as in Appendix A) — so Θ's decisions
    turn on whole buckets and are marginal often."""
    n = requests * (gamma + 1)
    width, jump = int(rng.integers(1, 5)), float(rng.choice([0.1, 0.2, 0.3, 0.5, 0.8, 1.2]))
    extra = np.maximum(np.arange(1, n + 1) - requests, 0)
    return specsched.CostTable.from_points(np.arange(1, n + 1), 1.0 + jump * np.ceil(extra / width))


def random_batch_case(rng: np.random.Generator, requests: int = 2) -> BatchCase:
    """V = 2..3, γ = 2, 2 tokens per request, R = `requests` (2: ~30 ms to enumerate; 3: ~1 s)."""
    vocab, gamma = int(rng.integers(2, 4)), 2
    targets = tuple(
        ToyModel.from_weights(_weights(rng, vocab, 2), int(rng.integers(1 << 16))) for _ in range(requests)
    )
    drafts = tuple(
        ToyModel.from_weights(_weights(rng, vocab, 2), int(rng.integers(1 << 16))) for _ in range(requests)
    )
    values = tuple(float(v) for v in rng.choice(CONF_VALUES, size=vocab, replace=False))
    firsts = tuple(float(v) for v in rng.choice(FIRSTS, size=requests, replace=False))
    prompts = tuple((r,) for r in range(requests))
    return BatchCase(targets, drafts, TokenConf(firsts, values), gamma, 2, prompts,
                     batch_cost(rng, requests, gamma))  # fmt: skip


def batch_gap(case: BatchCase, plan: Callable, *, delay: int = 0, prior: float = 0.0) -> float:
    """Total-variation distance between the batch's exact emitted law and the product of the targets' laws
    (0.0 exactly when lossless). plan: emitted_law's `plan(conf, stale, drafts) -> lengths`."""
    law = emitted_law(case.targets, case.drafts, case.conf, plan, length=case.length, gamma=case.gamma,
                      prompts=case.prompts, delay=delay, prior=prior)  # fmt: skip
    return law_gap(law, target_law(case.targets, length=case.length, prompts=case.prompts))


def peek_partner(conf: np.ndarray, stale, drafts) -> list[int]:
    """The cross-request negative control (module doc): request r verifies all γ drafts iff the next
    request's confidence at position 1 (a function of that request's first draft) is ≥ 1/2."""
    R, gamma = conf.shape
    if gamma < 2:
        return [0] * R
    return [gamma if conf[(r + 1) % R, 1] >= 0.5 else 0 for r in range(R)]


def _plan_of(policy, cost):
    return policy_plan(policy, cost)


def prove(subject, seeds: tuple[int, ...], cases: int, requests: int = 2) -> tuple[int, float]:
    """(seeds in which some case showed a gap, the largest gap): `cases` random batch cases per seed for
    `subject` (a specsched policy, made with make_policy, or a plan callable)."""
    caught, worst = 0, 0.0
    for seed in seeds:
        rng = np.random.default_rng(np.random.SeedSequence([seed, 32]))
        found = False
        for _ in range(cases):
            case = random_batch_case(rng, requests)
            if callable(subject) and not hasattr(subject, "trusted"):
                plan, delay = subject, 0
            else:
                plan, delay = _plan_of(subject, case.cost), subject.delay
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", specsched.LosslessnessWarning)
                gap = batch_gap(case, plan, delay=delay)
            worst = max(worst, gap)
            if gap > 0:
                found = True
                break  # caught in this seed
        caught += found
    return caught, worst


def firewall_violation(policy, rng: np.random.Generator, trials: int = 40) -> str | None:
    """The first violation of the own-request firewall (module doc) on random batches, or None: for every
    request r and position i, ℓ_r ≥ i must read the same whether conf[r, i:] is as drawn, all 0 or all 1.
    Stale rows (delay ≥ 1) are drawn once and held; with delay 0 they are the current rows."""
    stair = specsched.with_cudagraphs(
        specsched.CostTable.from_points([1, 512], [0.01, 0.03], mode="linear"), max_capture_size=512
    )
    for t in range(trials):
        R, gamma = int(rng.integers(1, 6)), int(rng.integers(2, 5))
        cost = stair if t % 4 == 3 else batch_cost(rng, R, gamma)
        conf = rng.choice(CONF_VALUES, size=(R, gamma)) if t % 3 == 0 else rng.beta(6, 2, size=(R, gamma))
        lagged = rng.beta(6, 2, size=(R, gamma)) if policy.uses_stale and policy.delay else None

        def stale(c: np.ndarray, lagged=lagged) -> np.ndarray | None:  # delay 0: the current rows
            return (c if policy.uses_stale else None) if lagged is None else lagged

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", specsched.LosslessnessWarning)
            base = policy(conf, cost, stale=stale(conf))
            for r in range(R):
                for i in range(1, gamma):
                    for fill in (0.0, 1.0):
                        other = conf.copy()
                        other[r, i:] = fill
                        moved = policy(other, cost, stale=stale(other))
                        if min(int(base[r]), i) != min(int(moved[r]), i):
                            return (
                                f"ℓ_{r} ≥ {i} read conf[{r}, {i}:] (R={R}, γ={gamma}, {cost.name or 'table'})"
                            )
    return None


def _proof_subject(name: str, quick: bool):
    """The registered policy at its defaults, its delay capped at 1 (the enumeration's state holds `delay`
    rows per request; the firewall is the same for every delay ≥ 1)."""
    policy = specsched.make_policy(name)
    if policy.delay > 1:
        policy = specsched.make_policy(name, **{**policy.params, "delay": 1})
    return policy


def policy_verdicts(quick: bool = False, seed: int = 20240611, only=None) -> dict[str, tuple[bool, int, str]]:
    """{policy: (passed, cases, detail)} for every registered policy that claims to be lossless: the
    own-request firewall on random batches, then exact enumeration of random batches of 2 requests.
    only: None, or the names to prove."""
    from specsched.registry import specs

    cases = 6 if quick else 30
    out: dict[str, tuple[bool, int, str]] = {}
    for i, (name, spec) in enumerate(specs().items()):
        if spec.control or (only is not None and name not in only):
            continue
        policy = _proof_subject(name, quick)
        broken = firewall_violation(policy, np.random.default_rng(np.random.SeedSequence([seed, i])))
        if broken is not None:
            out[name] = (False, 0, f"firewall: {broken}")
            continue
        caught, worst = prove(policy, (seed + i,), cases)
        out[name] = (caught == 0, cases, f"firewall held; batches of 2 exact, max TV {worst:.3g}")
    return out


def control_verdicts(quick: bool = False) -> dict[str, tuple[int, int]]:
    """{control: (seeds caught, seeds tried)}: every registered negative control and `peek_partner`, by
    random batch cases only (up to 100 a seed; the hand-built Appendix A case is not used)."""
    from specsched.registry import specs

    seeds = tuple(range(3 if quick else 10))
    subjects = {name: specsched.make_policy(name) for name, spec in specs().items() if spec.control}
    subjects["peek_partner (cross-request)"] = peek_partner
    return {name: (prove(s, seeds, 100)[0], len(seeds)) for name, s in subjects.items()}
