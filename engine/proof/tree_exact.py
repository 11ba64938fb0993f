"""Exact enumeration of what tree-verified speculative decoding emits, in `fractions.Fraction` arithmetic.

Role: the losslessness proof of engine.tree_verify. A tree shape is a nested tuple (a node is the tuple
of its children's shapes: `()` a leaf, `((), ())` two leaf children; `full_shape([2, 2])` the SGLang-style
full tree). One verify step drafts the tree from the toy draft model (engine.proof.exact.ToyModel: rows
depend on the whole context) with a child rule (`MODES`: i.i.d. "sampled" children, deterministic "topk"
children with one-hot draft rows, "norepl" sampling without replacement) and verifies it with the walk of
engine.tree_verify (the same `accept_prob` and `residual`). The law is computed by recursion rather than
by listing trees: a child's subtree is drafted only from its own token, and a rejected child's subtree is
never read, so `step_law` enumerates, per node, each child's token and its accept/reject branch, exactly.
`keep(ctx, i, drawn, x)` is the scheduler's hook: whether child i (token x, earlier siblings `drawn`) is
verified at all (a False stops the siblings there). A lawful plan never looks at x (the node's own
token); one that does is the lookahead bias for nodes, and must show a gap. `emitted_law` composes steps
to `length` tokens; lossless means it equals engine.proof.exact.target_law exactly.

May import: stdlib, engine.verify, engine.sampling, engine.proof.exact.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction

from engine.proof.exact import Law
from engine.verify import accept_prob, residual

MODES = ("sampled", "topk", "norepl")
Shape = tuple


def full_shape(widths: Sequence[int]) -> Shape:
    """The full tree whose depth-d nodes have widths[d] children (widths [1]*γ: a chain of γ drafts)."""
    if not widths:
        return ()
    child = full_shape(widths[1:])
    return tuple(child for _ in range(widths[0]))


def prune(shape: Shape, cap: int) -> Shape:
    """The first `cap` nodes of `shape` in BFS order (root not counted): a node cap, as SGLang's."""
    order, frontier = [], [((), shape)]
    while frontier and len(order) < cap:
        nxt = []
        for path, node in frontier:
            for i, child in enumerate(node):
                if len(order) < cap:
                    order.append(path + (i,))
                    nxt.append((path + (i,), child))
        frontier = nxt
    kept = set(order)

    def build(path, node):
        return tuple(build(path + (i,), c) for i, c in enumerate(node) if path + (i,) in kept)

    return build((), shape)


def child_row(mode: str, q: Sequence[Fraction], i: int, drawn: tuple[int, ...]) -> tuple[Fraction, ...]:
    """The distribution child i is drawn from, given the draft row q and the earlier siblings' tokens."""
    vocab = len(q)
    if mode == "sampled":
        return tuple(q)
    if mode == "topk":
        order = sorted(range(vocab), key=lambda v: (-q[v], v))
        t = order[i % vocab]
        return tuple(Fraction(int(v == t)) for v in range(vocab))
    if mode == "norepl":
        w = [Fraction(0) if v in drawn else q[v] for v in range(vocab)]
        total = sum(w)
        if total == 0:  # every token drawn already: draw from q again (still the row it is drawn from)
            return tuple(q)
        return tuple(x / total for x in w)
    raise ValueError(f"mode: one of {MODES}, got {mode!r}")


def _add(out: Law, law: Law, weight: Fraction, prefix: tuple = ()) -> None:
    for k, v in law.items():
        out[prefix + k] += weight * v


def step_law(
    target: Callable,
    draft: Callable,
    ctx: tuple,
    shape: Shape,
    mode: str,
    *,
    keep: Callable | None = None,
    walk: Callable | None = None,
) -> Law:
    """Exact law of the tokens one tree-verify step emits from context `ctx` (emitted tuple -> probability).

    `walk(r, trials, final)`: a mutation hook for the negative controls (engine.proof.tree_controls); the
    default is the verifier's rule."""

    def node(ctx: tuple, shape: Shape, r: Sequence[Fraction]) -> Law:
        return siblings(ctx, shape, r, r, 0, ())

    def siblings(ctx, shape, root_p, r, i, drawn) -> Law:
        out: Law = defaultdict(Fraction)
        if i == len(shape):
            _add(out, {(v,): x for v, x in enumerate(r) if x}, Fraction(1))
            return out
        q = child_row(mode, draft(ctx), i, drawn)
        for x, qx in enumerate(q):
            if not qx:
                continue
            if keep is not None and not keep(ctx, i, drawn, x):
                _add(out, {(v,): w for v, w in enumerate(r) if w}, qx)  # stop: the residual as it is
                continue
            if walk is None:
                a, r_next = accept_prob(r[x], qx), None
            else:
                a, r_next = walk(root_p, r, q, x)
            if a:
                sub = node(ctx + (x,), shape[i], target(ctx + (x,)))
                _add(out, sub, qx * a, (x,))
            if a != 1:
                nr = residual(r, q) if r_next is None else r_next
                _add(out, siblings(ctx, shape, root_p, nr, i + 1, drawn + (x,)), qx * (1 - a))
        return out

    return dict(node(tuple(ctx), shape, target(tuple(ctx))))


def emitted_law(
    target: Callable,
    draft: Callable,
    shape: Shape,
    mode: str,
    *,
    length: int,
    prompt: tuple = (),
    keep: Callable | None = None,
    walk: Callable | None = None,
) -> Law:
    """Exact law of the first `length` tokens emitted by repeated tree-verify steps (key: (tokens,), as
    engine.proof.exact.target_law keys one request)."""
    states: dict[tuple, Fraction] = {tuple(prompt): Fraction(1)}
    final: Law = defaultdict(Fraction)
    memo: dict[tuple, Law] = {}
    while states:
        nxt: dict[tuple, Fraction] = defaultdict(Fraction)
        for ctx, weight in states.items():
            done = len(ctx) - len(prompt)
            if done >= length:
                final[(ctx[len(prompt) :],)] += weight
                continue
            if ctx not in memo:
                memo[ctx] = step_law(target, draft, ctx, shape, mode, keep=keep, walk=walk)
            for emitted, pr in memo[ctx].items():
                nxt[ctx + emitted[: length - done]] += weight * pr
        states = nxt
    return dict(final)


def batch_emitted_law(
    targets: Sequence[Callable],
    drafts: Sequence[Callable],
    shape: Shape,
    mode: str,
    *,
    length: int,
    keep: Callable | None = None,
) -> Law:
    """Exact joint law of several requests decoded in one batch (key: tuple of per-request tuples, as
    engine.proof.exact.target_law), with a batch-level node budget: `keep(ctxs, r, ctx, i, drawn, x)`
    sees every request's committed context (what a scheduler knows before the step's drafts) besides
    request r's own arguments (tree_exact.step_law's hook)."""
    n = len(targets)
    states: dict[tuple, Fraction] = {((),) * n: Fraction(1)}
    final: Law = defaultdict(Fraction)
    while states:
        nxt: dict[tuple, Fraction] = defaultdict(Fraction)
        for ctxs, weight in states.items():
            if all(len(c) >= length for c in ctxs):
                final[ctxs] += weight
                continue
            laws = []
            for r in range(n):
                if len(ctxs[r]) >= length:
                    laws.append({(): Fraction(1)})
                    continue
                hook = None if keep is None else (lambda c, i, d, x, r=r, cs=ctxs: keep(cs, r, c, i, d, x))
                laws.append(step_law(targets[r], drafts[r], ctxs[r], shape, mode, keep=hook))
            for combo in itertools.product(*(law.items() for law in laws)):
                w = weight
                new = []
                for r, (emitted, pr) in enumerate(combo):
                    w *= pr
                    new.append(ctxs[r] + emitted[: max(length - len(ctxs[r]), 0)])
                nxt[tuple(new)] += w
        states = nxt
    return dict(final)
