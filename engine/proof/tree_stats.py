"""Large-N sampling check of the real tree verifier (torch or Triton): χ² of each emitted token given the
tokens emitted before it in the same step.

Role: the exact proof (engine.proof.tree_exact) covers the walk's rule; this checks the plumbing of the
actual `tree_verify` kernel (node indexing, the residual scratch row, which noise feeds which draw). Each
trial drafts a fresh tree from path-dependent banks (engine.proof.tree_cases); given the first k emitted
tokens, token k must follow the target row of that prefix. Groups with fewer than 100 samples are skipped,
bins with expected count < 5 merged, threshold df + 10·sqrt(2·df) (engine.proof.stats). The control
"soft rows for top-k children" hands the verifier the parent's draft row for deterministic children
instead of the one-hot they were chosen by (treating top-k children as sampled), which biases the output.

May import: torch, numpy, stdlib, engine.tree_verify, engine.proof.stats, engine.proof.tree_cases.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import torch

from engine.proof.stats import chi2_threshold, merged_chi2
from engine.proof.tree_cases import RowBank, draft_tree, random_bank, shape_parents
from engine.tree_verify import tree_verify

SOFT_TOPK = "soft rows for top-k children"


def prefix_chi2(emitted: torch.Tensor, n: torch.Tensor, row, *, max_pos: int = 3, min_count: int = 100):
    """(worst χ²/threshold, groups tested) over (prefix → next token) groups of the emitted tokens."""
    groups: dict[tuple, Counter] = defaultdict(Counter)
    for seq, m in zip(emitted.tolist(), n.tolist()):
        for k in range(min(m, max_pos)):
            groups[tuple(seq[:k])][seq[k]] += 1
    worst, tested = 0.0, 0
    for prefix, counts in groups.items():
        total = sum(counts.values())
        if total < min_count:
            continue
        probs = row(prefix)
        obs = [counts.get(v, 0) for v in range(probs.numel())]
        stat, df = merged_chi2(obs, (probs * total).numpy())
        if df:
            worst, tested = max(worst, stat / chi2_threshold(df)), tested + 1
    return worst, tested


def tree_chi2(
    seed: int,
    *,
    widths=(2, 2),
    mode: str = "sampled",
    vocab: int = 5,
    trials: int = 6000,
    backend: str = "torch",
    device: str = "cpu",
    control: str | None = None,
) -> tuple[float, int]:
    """Draft `trials` trees (one shape, fresh drafts and noise each) and verify them in one batch; returns
    prefix_chi2 of what was emitted against the target rows."""
    gen = torch.Generator().manual_seed(seed)
    parents = shape_parents(list(widths))
    target = random_bank(gen, 3, vocab, salt=1)
    other = random_bank(gen, 3, vocab, salt=1, scale=1.0)
    draft = RowBank(0.6 * target.rows + 0.4 * other.rows, 1)  # correlated with the target, as a drafter
    built = [draft_tree(parents, target, draft, mode, gen) for _ in range(trials)]
    q = torch.stack([b[1] for b in built])
    if control == SOFT_TOPK:
        for t, b in enumerate(built):
            for i in range(1, len(parents)):
                q[t, i] = draft.row(b[3][parents[i]])
    elif control is not None:
        raise ValueError(f"control: unknown tree χ² control {control!r}")
    par = torch.tensor([0] + parents[1:]).expand(trials, len(parents)).contiguous()
    emitted, n, _ = tree_verify(
        par.to(device),
        torch.stack([b[0] for b in built]).to(device),
        q.to(device),
        torch.stack([b[2] for b in built]).to(device),
        generator=torch.Generator(device=device).manual_seed(seed + 1),
        backend=backend,
    )
    return prefix_chi2(emitted.cpu(), n.cpu(), target.row)
