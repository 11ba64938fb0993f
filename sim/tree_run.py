"""A closed-loop decode run of draft trees: chain, fixed trees and scheduled tree budgets, priced per step.

Role: the tree counterpart of the simulator's decode loop, at a fixed concurrency (the load): every step
each of the R running requests drafts (a chain or a `sim.tree` tree), a node budget picks what is
verified (`specsched.tree`), the tree acceptance model draws what is accepted, and the step is billed by
a `specsched.StepCost` (draft pass per depth, forward over Σ(1 + nodes) query tokens, KV reads, the tree
kernel's penalty as the `tree` part). A request that has emitted `output` tokens is replaced by a fresh
one (new latent); its KV grows from `prompt` by what it emits. Everything random comes from one
SeedSequence (truth, estimate, acceptance, latents: four spawned streams), so a run is a pure function of
its arm, deployment and seed. An arm with topk = 1 runs today's chain code path (sample_chain, the chain's
DraftCost), so a chain arm and a topk = 1 tree arm are bit-identical.

Policies (`Arm.policy`): "full" (verify every drafted node, up to the cap: vLLM's chain and SGLang's fixed
tree), "dspark" (Algorithm 1 over the nodes; on a chain exactly DSpark's decisions), "dspark_stale"
(the production variant: the batch's node budget — how many nodes in all — is planned on the estimate
rows of the previous step, before drafting; the drafter's own scores, known once it has drafted and
lawful for top-k children, then pick which nodes; a request's first step reads its domain's curve).

May import: numpy, the standard library, specsched, sim.model, sim.acceptance, sim.tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.acceptance import AcceptanceConfig, AcceptanceModel
from sim.tree import Tree, TreeShape, build_tree, sample_tree, static_tree, tree_draft_seconds
from specsched import CostTable, StepCost
from specsched.stepcost import PARTS, StepShape
from specsched.tree import admitted_mask, plan_nodes

POLICIES = ("full", "dspark", "dspark_stale")


@dataclass(frozen=True)
class Arm:
    """One way to draft and verify: shape (topk, depth, node cap, rank_hit), policy (POLICIES), whether
    the target verifies with the tree-attention kernel (tree_backend: vLLM runs every request through it
    once a tree is configured), draft layers in target-layer units, the budget's stop (`plan_nodes`:
    "first" is DSpark's Algorithm 1 as published, "best" the argmax of Θ); menu: draft shapes to choose
    from each step (`_choose`: the best Θ on the stale rows; `shape` is then only the first step's
    fallback label); switch_kernel: with a menu, steps that draft a chain verify with the chain kernel
    (an engine holding both kernels; vLLM picks one per deployment)."""

    name: str
    shape: TreeShape
    policy: str = "full"
    tree_backend: bool | None = None  # None: topk > 1
    layers: float = 1.0
    stop: str = "best"
    menu: tuple[TreeShape, ...] = ()
    switch_kernel: bool = True

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"arm {self.name!r}: policy must be one of {POLICIES}; got {self.policy!r}")

    @property
    def uses_tree_kernel(self) -> bool:
        return self.shape.topk > 1 if self.tree_backend is None else self.tree_backend


@dataclass(frozen=True)
class Load:
    """concurrency: running requests (R); steps: engine steps simulated; prompt, output: tokens."""

    concurrency: int
    steps: int = 300
    prompt: int = 512
    output: int = 256


@dataclass(frozen=True)
class RunResult:
    tokens: int
    seconds: float
    request_steps: int
    nodes: int
    parts: tuple[float, ...]

    @property
    def throughput(self) -> float:
        """Output tokens per second."""
        return self.tokens / self.seconds

    @property
    def tau(self) -> float:
        """Mean tokens emitted per request-step (acceptance length, bonus included)."""
        return self.tokens / self.request_steps


def make_step_cost(cost: CostTable, budget: int, tree_penalty: float) -> StepCost:
    """The StepCost of a run: the table's latency up to `budget` tokens; the tree part is tree_penalty ×
    the table's KV-read seconds per KV token (charged only on tree-kernel arms, through StepShape)."""
    latency = np.asarray(cost.latency(np.arange(budget + 1)), dtype=np.float64)
    return StepCost(
        cost=cost, draft_s=np.zeros(1), latency=latency, tree_kv_s=tree_penalty * cost.kv_token_seconds
    )


def _chain(true: np.ndarray, est: np.ndarray) -> Tree:
    R, g = true.shape
    par = np.broadcast_to(np.arange(g) - 1, (R, g)).copy()
    dep = np.broadcast_to(np.arange(1, g + 1), (R, g)).copy()
    return Tree(par, dep, est, true, np.zeros_like(true))


def _candidates(shape: TreeShape, true: np.ndarray, est: np.ndarray) -> Tree:
    g = shape.gamma
    if shape.widths:
        return static_tree(true, est, shape.widths, shape.rank_hit)
    if shape.topk == 1:
        return _chain(true[:, :g], est[:, :g])
    return build_tree(true, est, shape)


@dataclass
class _Ctx:
    """What one step's planning needs: the arm, the step cost, R, the token budget, host seconds, kv."""

    arm: Arm
    step: StepCost
    R: int
    budget: int
    host_s: float
    kv: int = 0

    def tree_kernel(self, shape: TreeShape) -> bool:
        if self.arm.menu and self.arm.switch_kernel:
            return shape.topk > 1
        return self.arm.uses_tree_kernel

    def fixed(self, shape: TreeShape) -> tuple[float, float]:
        """(draft seconds, the rest of the step independent of the nodes) for drafting `shape`."""
        cost = self.step.cost
        draft = tree_draft_seconds(cost, self.arm.layers, self.R, shape)
        extra = cost.kv_token_seconds * self.kv + self.host_s
        if self.tree_kernel(shape):
            extra += self.step.tree_kv_s * self.kv
        return draft, extra

    def plan(self, shape: TreeShape, tree: Tree, total: int | None = None) -> tuple[np.ndarray, float]:
        """(node counts int64[R], Θ of the plan) for `shape`'s candidates `tree` (`total`: the batch's
        node budget fixed beforehand, see `plan_nodes`)."""
        draft, extra = self.fixed(shape)
        if self.arm.policy == "full":
            m = tree.parents.shape[1]
            m = min(shape.tree_nodes, m) if shape.tree_nodes else m
            return np.full(self.R, min(m, (self.budget - self.R) // self.R), dtype=np.int64), 0.0
        counts, theta = plan_nodes(
            tree.est, tree.parents, self.step.cost, budget=self.budget, draft_s=draft, extra_s=extra,
            stop=self.arm.stop, depth=tree.depth, with_theta=True, total=total,
        )  # fmt: skip
        return (np.minimum(counts, shape.tree_nodes) if shape.tree_nodes else counts), theta


def _choose(ctx: _Ctx, true: np.ndarray, stale: np.ndarray) -> TreeShape:
    """The draft shape of this step: the arm's, or (a menu) the one whose plan on the STALE rows has the
    highest Θ — decided before drafting, from what the previous step left (lawful, like DSpark's depths)."""
    if not ctx.arm.menu:
        return ctx.arm.shape
    thetas = [ctx.plan(s, _candidates(s, true, stale))[1] for s in ctx.arm.menu]
    return ctx.arm.menu[int(np.argmax(thetas))]


def run_arm(
    arm: Arm,
    load: Load,
    step: StepCost,
    model: AcceptanceModel,
    seed: int,
    *,
    host_s: float = 0.0,
) -> RunResult:
    """Simulate `load.steps` steps of `arm` at `load.concurrency`; see the module doc. host_s: seconds of
    host work every step adds (an engine without overlap scheduling), in the `fixed` part."""
    R = load.concurrency
    rng_truth, rng_conf, rng_acc, rng_lat = (np.random.Generator(np.random.PCG64(s)) for s in
                                             np.random.SeedSequence(seed).spawn(4))  # fmt: skip
    dom = np.zeros(R, dtype=np.int64)
    latent = model.request_latent(R, rng_lat)
    gen = np.zeros(R, dtype=np.int64)
    prior = np.broadcast_to(model.curves[0], (R, model.gamma))
    stale = prior.copy()
    ctx = _Ctx(arm, step, R, len(step.latency) - 1, host_s)
    tokens = nodes = 0
    seconds = 0.0
    parts = np.zeros(len(PARTS))
    for _ in range(load.steps):
        true, est = model.step(dom, latent, rng_truth, rng_conf)
        ctx.kv = int(R * load.prompt + gen.sum())
        shape = _choose(ctx, true, stale)
        total = None
        if arm.policy == "dspark_stale":  # the batch's node budget from the stale rows, before drafting
            total = int(ctx.plan(shape, _candidates(shape, true, stale))[0].sum())
        tree = _candidates(shape, true, est)
        counts, _ = ctx.plan(shape, tree, total)
        verified = admitted_mask(counts, tree.est, tree.parents, tree.depth)
        accepted = sample_tree(tree, verified, true[:, : shape.gamma], rng_acc, shape.topk)
        b = int(R + counts.sum())
        tree_kv = ctx.kv if ctx.tree_kernel(shape) else 0
        bill = step.bill(StepShape(R, R, b, b, kv=ctx.kv, tree_kv=tree_kv), draft=ctx.fixed(shape)[0])
        seconds += bill.seconds + host_s
        parts += bill.parts
        parts[1] += host_s
        emitted = accepted + 1
        tokens += int(emitted.sum())
        nodes += int(counts.sum())
        gen += emitted
        stale = est
        done = gen >= load.output
        if done.any():  # replaced by fresh requests: new latent, no stale row yet (the curve instead)
            gen[done] = 0
            latent[done] = model.request_latent(int(done.sum()), rng_lat)
            stale = np.where(done[:, None], prior, stale)
    return RunResult(tokens, seconds, R * load.steps, nodes, tuple(parts.tolist()))


def acceptance_model(curve: np.ndarray, seed: int, **kw) -> AcceptanceModel:
    """The parametric acceptance model over one curve float64[γ] (knobs: sim.acceptance.AcceptanceConfig;
    a short held-out fit, sts_samples 2048, keeps set-up under a second)."""
    kw.setdefault("sts_samples", 2048)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(1)[0]))
    return AcceptanceModel(np.asarray(curve, dtype=np.float64)[None, :], AcceptanceConfig(**kw), rng)
