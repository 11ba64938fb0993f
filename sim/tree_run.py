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
(planned from the estimate rows of the previous step, the production variant; a request's first step
reads its domain's curve).

May import: numpy, the standard library, specsched, sim.model, sim.acceptance, sim.tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.acceptance import AcceptanceConfig, AcceptanceModel
from sim.tree import Tree, TreeShape, build_tree, sample_tree, static_tree, tree_draft_seconds
from specsched import CostTable, StepCost
from specsched.stepcost import StepShape
from specsched.tree import admitted_mask, plan_nodes

POLICIES = ("full", "dspark", "dspark_stale")


@dataclass(frozen=True)
class Arm:
    """One way to draft and verify: shape (topk, depth, node cap, rank_hit), policy (POLICIES), whether
    the target verifies with the tree-attention kernel (tree_backend: vLLM runs every request through it
    once a tree is configured), draft layers in target-layer units, the budget's stop (`plan_nodes`:
    "first" is DSpark's Algorithm 1 as published, "best" the argmax of Θ)."""

    name: str
    shape: TreeShape
    policy: str = "full"
    tree_backend: bool | None = None  # None: topk > 1
    layers: float = 1.0
    stop: str = "best"

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


def _candidates(arm: Arm, true: np.ndarray, est: np.ndarray) -> Tree:
    g = arm.shape.gamma
    if arm.shape.widths:
        return static_tree(true, est, arm.shape.widths, arm.shape.rank_hit)
    if arm.shape.topk == 1:
        return _chain(true[:, :g], est[:, :g])
    return build_tree(true, est, arm.shape)


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
    R, cost = load.concurrency, step.cost
    rng_truth, rng_conf, rng_acc, rng_lat = (np.random.Generator(np.random.PCG64(s)) for s in
                                             np.random.SeedSequence(seed).spawn(4))  # fmt: skip
    dom = np.zeros(R, dtype=np.int64)
    latent = model.request_latent(R, rng_lat)
    gen = np.zeros(R, dtype=np.int64)
    prior = np.broadcast_to(model.curves[0], (R, model.gamma))
    stale = prior.copy()
    draft_s = tree_draft_seconds(cost, arm.layers, R, arm.shape)
    tokens = nodes = 0
    seconds = 0.0
    parts = np.zeros(8)
    cap = arm.shape.tree_nodes
    for _ in range(load.steps):
        true, est = model.step(dom, latent, rng_truth, rng_conf)
        kv = int(R * load.prompt + gen.sum())
        extra = cost.kv_token_seconds * kv + (step.tree_kv_s * kv if arm.uses_tree_kernel else 0.0) + host_s
        planned = stale if arm.policy == "dspark_stale" else est
        tree = _candidates(arm, true, planned)
        if arm.policy == "full":
            m = tree.parents.shape[1]
            counts = np.full(R, min(cap, m) if cap else m, dtype=np.int64)
        else:
            counts = plan_nodes(
                tree.est, tree.parents, cost, draft_s=draft_s, extra_s=extra, stop=arm.stop, depth=tree.depth
            )
            if cap:
                counts = np.minimum(counts, cap)
        verified = admitted_mask(counts, tree.est, tree.parents, tree.depth)
        accepted = sample_tree(tree, verified, true[:, : arm.shape.gamma], rng_acc, arm.shape.topk)
        b = int(R + counts.sum())
        shape = StepShape(R, R, b, b, kv=kv, tree_kv=kv if arm.uses_tree_kernel else 0)
        bill = step.bill(shape, draft=draft_s)
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
