"""Large-N sampling check of the real verifier: per-position χ² with an adversarial draft.

Role: the exact tests prove the acceptance/residual rules; this checks the RNG plumbing of the actual
`rejection_sample` (noise shapes, which noise feeds which draw, row indexing) the way vLLM's MRV2 test does:
V = 16, 200k trials, target logits z per position, draft logits -z (~75% of drafts rejected), drafts sampled
by an exponential race, ragged verify lengths. Conditioned on reaching position k, the token emitted there
must follow p_k. Bins with expected count < 5 are merged; the threshold df + 10·sqrt(2·df) is ~10 sigma, so
the check does not flake but a shared-noise bug (χ² in the hundreds or thousands) fails it by far.

May import: torch, numpy, stdlib, engine.verify, engine.sampling, engine.proof.controls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from engine.proof.controls import SHARED_DRAFT_NOISE
from engine.sampling import race
from engine.verify import rejection_sample


def merged_chi2(counts: np.ndarray, expected: np.ndarray) -> tuple[float, int]:
    """(χ², df) after merging the bins with expected count < 5 into one (and, if that is still < 5, into the
    smallest remaining bin)."""
    counts, expected = np.asarray(counts, np.float64), np.asarray(expected, np.float64)
    small = expected < 5
    obs, exp = list(counts[~small]), list(expected[~small])
    if small.any():
        o, e = float(counts[small].sum()), float(expected[small].sum())
        if e < 5 and exp:
            i = int(np.argmin(exp))
            obs[i] += o
            exp[i] += e
        elif e > 0:
            obs.append(o)
            exp.append(e)
    obs_a, exp_a = np.array(obs), np.array(exp)
    stat = float(((obs_a - exp_a) ** 2 / exp_a).sum()) if exp_a.size else 0.0
    return stat, max(exp_a.size - 1, 0)


def chi2_threshold(df: int) -> float:
    return df + 10.0 * math.sqrt(2.0 * df)


@dataclass(frozen=True)
class PositionResult:
    position: int
    reached: int
    chi2: float
    df: int

    @property
    def ok(self) -> bool:
        return self.chi2 <= chi2_threshold(self.df)


def chi2_positions(
    seed: int,
    *,
    vocab: int = 16,
    gamma: int = 3,
    trials: int = 200_000,
    backend: str = "torch",
    control: str | None = None,
    device: str = "cpu",
    scale: float = 1.0,
) -> list[PositionResult]:
    """Run `trials` independent one-request verifications with fixed per-position target rows and the
    adversarial draft; return the χ² of each position's emitted token against p_k."""
    gen = torch.Generator(device=device).manual_seed(seed)
    z = torch.randn(gamma + 1, vocab, generator=gen, dtype=torch.float64, device=device) * scale
    p = torch.softmax(z, -1).float()
    q = torch.softmax(-z[:gamma], -1).float()
    e_draft = torch.empty(trials, gamma, vocab, dtype=torch.float64, device=device).exponential_(
        generator=gen
    )
    drafts = race(q.expand(trials, gamma, vocab), e_draft)
    lengths = torch.randint(0, gamma + 1, (trials,), generator=gen, device=device)
    noise = {}
    if control == SHARED_DRAFT_NOISE:
        noise["exponentials"] = e_draft[:, 0].contiguous()  # the draft's own sampling noise, reused
    elif control is not None:
        raise ValueError(f"control: unknown χ² control {control!r}")
    tokens, n_emit = rejection_sample(
        drafts,
        q.expand(trials, gamma, vocab),
        p.expand(trials, gamma + 1, vocab),
        lengths,
        generator=gen,
        backend=backend,
        **noise,
    )
    out = []
    for k in range(gamma + 1):
        reached = n_emit > k
        n = int(reached.sum())
        counts = torch.bincount(tokens[reached, k], minlength=vocab).cpu().numpy()
        stat, df = merged_chi2(counts, p[k].double().cpu().numpy() * n)
        out.append(PositionResult(k, n, stat, df))
    return out


def joint_step_chi2(
    seed: int, *, vocab: int = 3, gamma: int = 2, trials: int = 200_000, backend: str = "torch"
):
    """(χ², df): the joint law of everything one verify step emits (accepted prefix + residual/bonus) in
    `trials` runs of the real verifier against the exact law (proof.exact.step_law on the very same float
    rows, read as Fractions). Rows depend on the draft prefix (target row k and draft row k are picked by
    d_<k), so a wrong bonus row or a row offset shows up here, not only in the exact tests."""
    import itertools
    from fractions import Fraction

    from engine.proof.exact import step_law

    gen = torch.Generator().manual_seed(seed)
    n_prefix = sum(vocab**k for k in range(gamma + 1))
    table_p = torch.softmax(torch.randn(n_prefix, vocab, generator=gen, dtype=torch.float64) * 1.5, -1)
    table_q = torch.softmax(torch.randn(n_prefix, vocab, generator=gen, dtype=torch.float64) * 1.5, -1)

    def index(prefix) -> int:  # position of a draft prefix in the tables (all prefixes, by length)
        return sum(vocab**k for k in range(len(prefix))) + sum(
            t * vocab ** (len(prefix) - 1 - i) for i, t in enumerate(prefix)
        )

    drafts = torch.zeros(trials, gamma, dtype=torch.int64)
    rows = torch.zeros(trials, dtype=torch.int64)
    q = torch.zeros(trials, gamma, vocab, dtype=torch.float64)
    p = torch.zeros(trials, gamma + 1, vocab, dtype=torch.float64)
    offset = 0
    for k in range(gamma + 1):  # row index of the prefix d_<k: offset_k + base-V number of d_<k
        p[:, k] = table_p[offset + rows]
        if k < gamma:
            q[:, k] = table_q[offset + rows]
            e = torch.empty(trials, vocab, dtype=torch.float64).exponential_(generator=gen)
            drafts[:, k] = race(q[:, k], e)
            rows = rows * vocab + drafts[:, k]
        offset += vocab**k
    lengths = torch.full((trials,), gamma, dtype=torch.int64)
    tokens, n_emit = rejection_sample(drafts, q, p, lengths, generator=gen, backend=backend)
    outcomes = [o for n in range(1, gamma + 2) for o in itertools.product(range(vocab), repeat=n)]
    code = {o: i for i, o in enumerate(outcomes)}
    observed = np.zeros(len(outcomes))
    for row, n in zip(tokens.tolist(), n_emit.tolist()):
        observed[code[tuple(row[:n])]] += 1
    exact = dict.fromkeys(outcomes, Fraction(0))
    tp = [[Fraction(x) for x in r] for r in table_p.tolist()]
    tq = [[Fraction(x) for x in r] for r in table_q.tolist()]
    for d in itertools.product(range(vocab), repeat=gamma):
        weight = Fraction(1)
        for k in range(gamma):
            weight *= tq[index(d[:k])][d[k]]
        law = step_law(
            [tp[index(d[:k])] for k in range(gamma + 1)], [tq[index(d[:k])] for k in range(gamma)], d, gamma
        )
        for emitted, pr in law.items():
            exact[emitted] += weight * pr
    expected = np.array([float(exact[o]) for o in outcomes]) * trials
    return merged_chi2(observed, expected)
