"""Exact enumeration of what speculative decoding emits, in `fractions.Fraction` arithmetic.

Role: the core losslessness check. Toy target/draft models give prefix-dependent next-token distributions
over V <= 4 tokens as Fractions (zeros allowed); `emitted_law` composes verify steps -- every draft sequence
weighted by its draft probability, confidences from the draft prefix, verify lengths from a plan (any
scheduler, e.g. a specsched policy, with stale confidences kept exactly as engine.loop keeps them), and the
exact law of one verify step (`step_law`, built from the engine's own `accept_prob` and `residual`) -- until
every request has `length` tokens, and returns the exact joint law of the emitted sequences. Lossless means
it equals `target_law` (Π_t p(x_t | x_<t), independently per request) exactly. Truncating at a fixed length is
a stopping rule that does not look at token values, so it cannot hide or create bias.

May import: numpy, stdlib, specsched, engine.verify, engine.sampling, engine.loop.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from engine.sampling import SamplingParams, exact_transform
from engine.verify import accept_prob, residual
from specsched import DraftCost, StaleBuffer

Row = tuple[Fraction, ...]
Law = dict[tuple, Fraction]


def _ctx_hash(ctx: Sequence[int], salt: int) -> int:
    """A deterministic hash of the whole prefix (so the toy models are prefix-dependent, not Markov)."""
    h = (salt * 0x9E3779B1 + 0x632BE5AB) % (1 << 61)
    for t in ctx:
        h = (h * 1_000_003 + t + 1) % (1 << 61)
    return (h * 0x5851F42D + len(ctx)) % (1 << 61) >> 7


@dataclass(frozen=True)
class ToyModel:
    """p(. | ctx): one of `rows` (exact probability vectors) picked by a hash of the whole context."""

    rows: tuple[Row, ...]
    salt: int = 0

    @classmethod
    def from_weights(cls, weights: Sequence[Sequence[int]], salt: int = 0) -> ToyModel:
        rows = []
        for w in weights:
            total = sum(w)
            if total <= 0 or min(w) < 0:
                raise ValueError(f"ToyModel: weights {list(w)} must be >= 0 with a positive sum")
            rows.append(tuple(Fraction(x, total) for x in w))
        return cls(tuple(rows), salt)

    @property
    def vocab(self) -> int:
        return len(self.rows[0])

    def __call__(self, ctx: Sequence[int]) -> Row:
        return self.rows[_ctx_hash(ctx, self.salt) % len(self.rows)]


@dataclass(frozen=True)
class Derived:
    """A model derived row-wise from another: `fn(base(ctx))` (a sampling transform, a disjoint draft)."""

    base: Callable[[Sequence[int]], Row]
    fn: Callable[[Row], Row]

    def __call__(self, ctx: Sequence[int]) -> Row:
        return self.fn(self.base(ctx))


def transformed(model, params: SamplingParams) -> Derived:
    """The model after temperature/top-k/top-p, exactly (engine.sampling.exact_transform)."""
    return Derived(model, lambda row: tuple(exact_transform(row, params)))


def disjoint(row: Row) -> Row:
    """Uniform over the tokens `row` gives probability 0 (a draft that is always rejected)."""
    zeros = [i for i, x in enumerate(row) if x == 0]
    if not zeros:
        raise ValueError("disjoint: the row has full support")
    return tuple(Fraction(int(x == 0), len(zeros)) for x in row)


def one_hot_argmin(row: Row) -> Row:
    best = min(range(len(row)), key=lambda i: (row[i], i))
    return tuple(Fraction(int(i == best)) for i in range(len(row)))


def reversed_row(row: Row) -> Row:
    """Weights M - p (M = max + min): the draft favours what the target disfavours (adversarial)."""
    m = max(row) + min(row)
    w = [m - x for x in row]
    total = sum(w)
    return tuple(x / total for x in w) if total else row


@dataclass(frozen=True)
class ToyConf:
    """Confidence of the next draft position from the draft context (prefix + drafts so far): a float in
    [0, 1] picked from `values` by a hash, so it depends on realized drafts like a real confidence head."""

    values: tuple[float, ...]
    salt: int = 1

    def __call__(self, ctx: Sequence[int]) -> float:
        return self.values[_ctx_hash(ctx, self.salt) % len(self.values)]


def step_law(p_rows, q_rows, drafts, ell, *, accept=accept_prob, resid=residual, bonus_row=None) -> Law:
    """Exact law of the tokens one verify step emits for one request (emitted tuple -> probability).

    p_rows[k] = target p(. | ctx + drafts[:k]) for k <= ell; q_rows[k] = draft q(. | ctx + drafts[:k]) for
    k < ell. Draft k is accepted with accept(p_k(d_k), q_k(d_k)); the first rejection emits a token from
    resid(p_k, q_k); if all ell are accepted the bonus comes from p_rows[ell] (bonus_row: a mutation hook)."""
    out: Law = defaultdict(Fraction)
    reach = Fraction(1)
    for k in range(ell):
        d = drafts[k]
        a = accept(p_rows[k][d], q_rows[k][d])
        if a != 1:
            for v, rv in enumerate(resid(p_rows[k], q_rows[k])):
                if rv:
                    out[tuple(drafts[:k]) + (v,)] += reach * (1 - a) * rv
        reach *= a
        if reach == 0:
            return out
    row = p_rows[ell if bonus_row is None else bonus_row(ell)]
    for v, pv in enumerate(row):
        if pv:
            out[tuple(drafts[:ell]) + (v,)] += reach * pv
    return out


def _draft_sequences(draft, ctx: tuple, gamma: int):
    """Every draft sequence of length gamma with its probability (zero-probability branches dropped)."""
    seqs = [((), Fraction(1))]
    for _ in range(gamma):
        nxt = []
        for d, w in seqs:
            for v, qv in enumerate(draft(ctx + d)):
                if qv:
                    nxt.append((d + (v,), w * qv))
        seqs = nxt
    return seqs


def emitted_law(
    targets: Sequence,
    drafts: Sequence,
    conf: Callable[[Sequence[int]], float],
    plan: Callable,
    *,
    length: int,
    gamma: int,
    prompts: Sequence[tuple[int, ...]] | None = None,
    delay: int = 0,
    prior: float = 0.0,
    step: Callable = step_law,
) -> Law:
    """Exact joint law of the first `length` tokens each request emits (key: tuple of per-request tuples).

    `plan(conf float64[R, γ], stale float64[R, γ] | None, drafts list[tuple]) -> lengths` picks verify
    lengths for the running requests; stale rows follow engine.loop's rule for `delay` (None when 0).
    Lengths are capped, value-blind, at the tokens a request may still emit (as the engine does)."""
    n_req = len(targets)
    prompts = [tuple(p) for p in (prompts or [()] * n_req)]
    states: dict[tuple, Fraction] = {(tuple(prompts), ((),) * n_req): Fraction(1)}
    final: Law = defaultdict(Fraction)
    while states:
        nxt: dict[tuple, Fraction] = defaultdict(Fraction)
        for (ctxs, hists), weight in states.items():
            active = [r for r in range(n_req) if len(ctxs[r]) - len(prompts[r]) < length]
            if not active:
                final[tuple(c[len(p) :] for c, p in zip(ctxs, prompts))] += weight
                continue
            options = [_draft_sequences(drafts[r], ctxs[r], gamma) for r in active]
            for combo in itertools.product(*options):
                ds = [d for d, _ in combo]
                w = weight
                for _, qw in combo:
                    w *= qw
                rows = np.array(
                    [[conf(ctxs[r] + d[:k]) for k in range(gamma)] for r, d in zip(active, ds)],
                    dtype=np.float64,
                ).reshape(len(active), gamma)
                stale = None
                if delay:
                    stale = _lagged([hists[r] for r in active], delay, prior, gamma)
                ells = [int(x) for x in plan(rows, stale, ds)]
                laws = []
                for i, r in enumerate(active):
                    ell = min(ells[i], length - (len(ctxs[r]) - len(prompts[r])) - 1)
                    d, ctx = ds[i], ctxs[r]
                    p_rows = [targets[r](ctx + d[:k]) for k in range(ell + 1)]
                    q_rows = [drafts[r](ctx + d[:k]) for k in range(ell)]
                    laws.append(list(step(p_rows, q_rows, d, ell).items()))
                for outcome in itertools.product(*laws):
                    new_ctx, new_hist, w2 = list(ctxs), list(hists), w
                    for i, r in enumerate(active):
                        emitted, pr = outcome[i]
                        w2 *= pr
                        keep = length - (len(ctxs[r]) - len(prompts[r]))
                        new_ctx[r] = ctxs[r] + tuple(emitted[:keep])
                        if delay:
                            new_hist[r] = (hists[r] + (tuple(rows[i]),))[-delay:]
                    if w2:
                        nxt[(tuple(new_ctx), tuple(new_hist))] += w2
        states = nxt
    return dict(final)


def _lagged(hists: Sequence[tuple], delay: int, prior: float, gamma: int) -> np.ndarray:
    """float64[n, γ]: each request's row from `delay` steps earlier, or `prior` while it is younger — the
    engine's rule, read through the one StaleBuffer (specsched.stale). hists[i]: request i's last ≤ delay
    rows, oldest first (so its age, as far as the rule can tell, is len(hists[i]))."""
    buf = StaleBuffer(len(hists), gamma, delay)
    for i, hist in enumerate(hists):
        for age, row in enumerate(hist):
            buf.record([i], [age], np.asarray([row], dtype=np.float64))
    ages = np.array([len(h) for h in hists], dtype=np.int64)
    return buf.lagged(np.arange(len(hists)), ages, prior)


def target_law(targets: Sequence, *, length: int, prompts: Sequence[tuple[int, ...]] | None = None) -> Law:
    """Π_t p(x_t | x_<t) over every sequence of `length` tokens, jointly for independent requests."""
    prompts = [tuple(p) for p in (prompts or [()] * len(targets))]
    per_req = []
    for model, prompt in zip(targets, prompts):
        seqs = [((), Fraction(1))]
        for _ in range(length):
            seqs = [(s + (v,), w * pv) for s, w in seqs for v, pv in enumerate(model(prompt + s)) if pv]
        per_req.append(seqs)
    law: Law = {}
    for combo in itertools.product(*per_req):
        w = Fraction(1)
        for _, pw in combo:
            w *= pw
        law[tuple(s for s, _ in combo)] = w
    return law


def law_gap(law: Law, reference: Law) -> float:
    """Total-variation distance between two laws; exactly 0.0 iff they are equal (computed in Fractions when
    both laws are exact, so any bias, however small, shows as a positive gap)."""
    keys = set(law) | set(reference)
    return float(sum(abs(law.get(k, 0) - reference.get(k, 0)) for k in keys) / 2)


def policy_plan(policy, cost, *, max_batch_tokens: int | None = None, drafter=None) -> Callable:
    """Adapt a specsched Policy to emitted_law's plan signature (memoized on the confidence values).

    An adaptive policy (draft="adaptive") first plans depths from the stale rows with `drafter` (a
    specsched.DraftCost; default a one-layer parallel drafter), then verifies within them; with no stale
    rows (delay 0) it plans from the current ones — the negative control, which must show a gap."""
    memo: dict[tuple, list[int]] = {}
    adaptive = getattr(policy, "draft", "full") == "adaptive"
    drafter = drafter if drafter is not None else DraftCost("parallel", 1.0)

    def plan(conf: np.ndarray, stale: np.ndarray | None, drafts) -> list[int]:
        key = (conf.tobytes(), conf.shape, None if stale is None else stale.tobytes())
        if key not in memo:
            use = stale if policy.uses_stale else None
            if adaptive:
                lag = conf if stale is None else stale
                depths = policy.depths(lag, cost, drafter, max_batch_tokens=max_batch_tokens)
                lengths = policy(conf, cost, stale=lag, max_batch_tokens=max_batch_tokens, depths=depths)
            else:
                lengths = policy(conf, cost, stale=use, max_batch_tokens=max_batch_tokens)
            memo[key] = lengths.tolist()
        return memo[key]

    return plan


DRAFT_KINDS = ("independent", "equal", "onehot", "disjoint", "reversed")


@dataclass(frozen=True)
class ToyCase:
    """One exact-enumeration scenario for a single request."""

    target: Callable
    draft: Callable
    conf: ToyConf
    gamma: int
    length: int
    prompt: tuple[int, ...] = ()


def build_case(
    target_weights: Sequence[Sequence[int]],
    draft_kind: str,
    draft_weights: Sequence[Sequence[int]],
    conf_values: Sequence[float],
    *,
    gamma: int,
    length: int,
    salt: int = 0,
    params: SamplingParams | None = None,
    prompt: tuple[int, ...] = (),
) -> ToyCase:
    """Toy target from integer weight rows; draft of `draft_kind` (DRAFT_KINDS); both optionally passed
    through the same sampling transform (as the engine drafts and verifies with the request's params)."""
    if draft_kind not in DRAFT_KINDS:
        raise ValueError(f"draft_kind: one of {DRAFT_KINDS}, got {draft_kind!r}")
    rows = [list(w) for w in target_weights]
    if draft_kind == "disjoint":  # the target needs a zero in every row for a disjoint draft to exist
        for w in rows:
            w[(salt + len(w) - 1) % len(w)] = 0
            if sum(w) == 0:
                w[(salt + len(w)) % len(w)] = 1
    target = ToyModel.from_weights(rows, salt)
    draft = {
        "independent": lambda: ToyModel.from_weights(draft_weights, salt + 1),
        "equal": lambda: target,
        "onehot": lambda: Derived(ToyModel.from_weights(draft_weights, salt + 1), one_hot_argmin),
        "disjoint": lambda: Derived(target, disjoint),
        "reversed": lambda: Derived(target, reversed_row),
    }[draft_kind]()
    if params is not None:
        target, draft = transformed(target, params), transformed(draft, params)
    return ToyCase(target, draft, ToyConf(tuple(conf_values), salt + 2), gamma, length, tuple(prompt))


def case_gap(case: ToyCase, plan: Callable, *, delay: int = 0, prior: float = 0.0, step=step_law) -> float:
    """law_gap between what speculative decoding emits in `case` and the target's law (0.0 = lossless)."""
    law = emitted_law(
        [case.target], [case.draft], case.conf, plan, length=case.length, gamma=case.gamma,
        prompts=[case.prompt], delay=delay, prior=prior, step=step,
    )  # fmt: skip
    return law_gap(law, target_law([case.target], length=case.length, prompts=[case.prompt]))


def random_weights(rng: np.random.Generator, vocab: int, rows: int) -> list[list[int]]:
    """`rows` random integer weight rows over `vocab` tokens (a quarter zeroed, never all zero): the toy
    tables the random exact cases are built from (`ToyModel.from_weights`)."""
    out = []
    for _ in range(rows):
        w = [int(x) for x in rng.integers(0, 4, vocab) * (rng.random(vocab) > 0.25)]
        if sum(w) == 0:
            w[int(rng.integers(vocab))] = 1
        out.append(w)
    return out
