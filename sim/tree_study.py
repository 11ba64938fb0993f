"""What a researcher asks of trees: vLLM's published tree-vs-chain shape, and tree budgets across load.

Role: the computations behind paper_figs/tree_vs_chain.py and bench/bench_trees.py.
- `reproduce_22752`: vllm-project/vllm#22752 (Llama-3.1-8B-Instruct + EAGLE-LLaMA3.1-Instruct-8B, one GPU,
  MT-Bench, chain and tree on the same tree-attention backend): output tok/s 114.27 → 128.63 at batch 1
  (+12.6 %), 847.38 → 902.72 at 8, 1567.5 → 1640.95 at 16 (+4.7 %); mean acceptance length 2.05 (chain)
  vs 2.37 (tree). specbed takes from it only the acceptance lengths: a constant conditional acceptance c
  solved so that a depth-2 chain emits 2.05, and the rank-hit h so that the PR's stated test tree
  [(0,), (1,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)] emits 2.37 (the tree and chain depth used
  in the table are not stated there: that they are these is our reading); the step price comes from the
  catalogue (`specsched.price.vllm`, llama3.1-8b on one H100, shipped knobs), both arms with the tree kernel.
  tok/s = batch · published length / mean simulated step (the lengths are the model's expected ones by
  construction; the sampled run's own τ and gain are kept beside them as a check).
- `sweep`: throughput of chains, fixed trees, DSpark on chains and scheduled tree budgets at each load on
  a vLLM-priced deployment with the parametric acceptance model over a built-in curve.

May import: numpy, the standard library, specsched, sim (acceptance, curves, tree, tree_run, vllm_deploy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.tree import TreeShape, expected_length, static_tree
from sim.tree_run import Arm, Load, acceptance_model, make_step_cost, run_arm

PUBLISHED_22752 = {
    "batch": (1, 8, 16),
    "chain_tok_s": (114.27, 847.38, 1567.5),
    "tree_tok_s": (128.63, 902.72, 1640.95),
    "chain_length": 2.05,
    "tree_length": 2.37,
}
TREE_22752 = (2, 3)
#: the tree-attention backend's attention time over the Triton backend's, vllm-project/vllm#20401's
#: kernel table (batch 1, Q 13–40, context 1024 and 2048: 33.46 / 29.94 and 54.84 / 48.73 µs)
TREE_KERNEL_PENALTY = 0.12


class ConstantModel:
    """An acceptance source with the same conditional acceptance row for every request and step (truth =
    estimate): what a published mean acceptance length pins down, and nothing more."""

    vector_draws = False
    by_position = False

    def __init__(self, row: np.ndarray) -> None:
        self.curves = np.asarray(row, dtype=np.float64)[None, :]
        self.gamma = self.curves.shape[1]

    def request_latent(self, n: int, rng=None, domain_idx=None) -> np.ndarray:
        return np.zeros(n)

    def step(self, domain_idx, latent, rng_truth=None, rng_conf=None):
        row = np.broadcast_to(self.curves[0], (len(domain_idx), self.gamma)).copy()
        return row, row.copy()


def _bisect(f, lo: float, hi: float, target: float) -> float:
    """x in [lo, hi] with f(x) = target for increasing f (60 halvings)."""
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def fit_published(chain_length: float, tree_length: float, widths=TREE_22752) -> tuple[float, float]:
    """(c, h): the constant conditional acceptance giving a depth-len(widths) chain `chain_length`, and the
    rank-hit giving the static tree `widths` `tree_length` (both expected lengths, bonus included)."""
    g = len(widths)
    c = _bisect(lambda x: sum(x**k for k in range(g + 1)), 0.0, 1.0, chain_length)
    row = np.full((1, g), c)
    h = _bisect(lambda x: float(expected_length(static_tree(row, row, widths, x))[0]), 0.0, 1.0, tree_length)
    return c, h


def vllm_cost(model: str, gpu: str, tp: int = 1):
    """The catalogue step cost of a vLLM deployment (shipped knobs of the GPU)."""
    from specsched.price.knobs import shipped_knobs
    from specsched.price.vllm import VllmSpec, cost_table

    return cost_table(VllmSpec(model, gpu=gpu, tp=tp), shipped_knobs(gpu))


def reproduce_22752(steps: int = 2000, prompt: int = 128, output: int = 512, host_s: float = 0.0) -> dict:
    """Predicted chain and tree tok/s and the tree's gain at the published batch sizes (module doc);
    host_s: per-step host seconds (see `host_from_chain`)."""
    pub = PUBLISHED_22752
    c, h = fit_published(pub["chain_length"], pub["tree_length"])
    step = make_step_cost(vllm_cost("llama3.1-8b", "h100"), 8192, TREE_KERNEL_PENALTY)
    model = ConstantModel(np.full(len(TREE_22752), c))
    chain = Arm("chain", TreeShape(1, len(TREE_22752), rank_hit=h), tree_backend=True)
    tree = Arm("tree", TreeShape(widths=TREE_22752, rank_hit=h), tree_backend=True)
    rows = []
    for b, pc, pt in zip(pub["batch"], pub["chain_tok_s"], pub["tree_tok_s"]):
        load = Load(b, steps=steps, prompt=prompt, output=output)
        rc, rt = (run_arm(a, load, step, model, seed=b, host_s=host_s) for a in (chain, tree))
        step_c, step_t = rc.seconds / steps, rt.seconds / steps
        chain_tok, tree_tok = b * pub["chain_length"] / step_c, b * pub["tree_length"] / step_t
        rows.append({
            "batch": b, "chain_step_ms": 1e3 * step_c, "tree_step_ms": 1e3 * step_t,
            "chain_tok_s": chain_tok, "tree_tok_s": tree_tok, "gain": tree_tok / chain_tok - 1,
            "gain_sampled": rt.throughput / rc.throughput - 1, "chain_tau_sampled": rc.tau,
            "tree_tau_sampled": rt.tau, "published_gain": pt / pc - 1,
        })  # fmt: skip
    return {"c": c, "rank_hit": h, "host_s": host_s, "rows": rows}


def host_from_chain(prompt: int = 128, output: int = 512) -> float:
    """The per-step seconds the measured engine spent beyond the catalogue's step: the published chain
    step at batch 1 (2.05 / 114.27 tok/s) minus the predicted one (spends the batch-1 chain figure as a
    calibration; the tree figures and the larger batches stay predictions)."""
    pub = PUBLISHED_22752
    r = reproduce_22752(prompt=prompt, output=output)["rows"][0]
    return pub["chain_length"] / pub["chain_tok_s"][0] - r["chain_step_ms"] / 1e3


@dataclass(frozen=True)
class Deployment:
    model: str
    gpu: str
    tp: int = 1

    @property
    def name(self) -> str:
        return f"{self.model}@{self.gpu}x{self.tp}"


def default_arms(rank_hit: float) -> list[Arm]:
    """Chains (vLLM, γ 2–7), DSpark on a γ = 7 chain (as published, first stop; and the argmax stop), fixed
    trees (SGLang's topk / steps / node cap), tree budgets over topk 4 / depth 5, and over a per-step
    draft-shape menu (chain 7, 2×4, 4×5, 8×6): fresh rows, and all-stale (the production variant)."""
    s = dict(rank_hit=rank_hit)
    arms = [Arm(f"chain{g}", TreeShape(1, g, **s)) for g in (2, 3, 5, 7)]
    arms += [Arm("dspark_chain", TreeShape(1, 7, **s), "dspark", stop="first")]
    arms += [Arm("dspark_chain_best", TreeShape(1, 7, **s), "dspark", stop="best")]
    for k, g, cap in ((2, 3, 0), (2, 4, 8), (4, 5, 16), (4, 5, 32), (8, 6, 64), (3, 4, 12)):
        arms.append(Arm(f"tree_k{k}_d{g}_n{cap or 'all'}", TreeShape(k, g, cap, **s)))
    arms += [Arm("dspark_tree", TreeShape(4, 5, **s), "dspark")]
    menu = (TreeShape(1, 7, **s), TreeShape(2, 4, **s), TreeShape(4, 5, **s), TreeShape(8, 6, **s))
    arms += [Arm("dspark_tree_adaptive", menu[2], "dspark", menu=menu)]
    arms += [Arm("dspark_tree_stale", menu[2], "dspark_stale", menu=menu)]
    return arms


def sweep(
    dep: Deployment,
    loads: list[int],
    arms: list[Arm],
    *,
    curve: np.ndarray,
    steps: int,
    seeds: int,
    progress=None,
    acceptance: dict | None = None,
) -> dict[str, list[float]]:
    """{arm name: tok/s at each load} (each the pooled tokens / seconds over `seeds` runs)."""
    step = make_step_cost(vllm_cost(dep.model, dep.gpu, dep.tp), 8192, TREE_KERNEL_PENALTY)
    model = acceptance_model(curve, 0, **(acceptance or {}))
    out: dict[str, list[float]] = {a.name: [] for a in arms}
    for load in loads:
        for arm in arms:
            tok = sec = 0.0
            for s in range(seeds):
                r = run_arm(arm, Load(load, steps=steps), step, model, seed=1000 * s + load)
                tok, sec = tok + r.tokens, sec + r.seconds
            out[arm.name].append(tok / sec)
            if progress is not None:
                progress()
    return out


def verdict(table: dict[str, list[float]], loads: list[int]) -> list[dict]:
    """Per load: scheduled tree budgets (the draft-shape menu, the stale production variant: lossless) / best
    of {DSpark on chains (either stop), best fixed tree}; the same for fresh rows (not lossless: reported
    only) and for budgets over one fixed shape."""
    fixed = [k for k in table if k.startswith("tree_")]
    rows = []
    for i, load in enumerate(loads):
        ds = max(table["dspark_chain"][i], table["dspark_chain_best"][i])
        best_fixed = max(table[k][i] for k in fixed)
        best_name = max(fixed, key=lambda k: table[k][i])
        # The headline is the stale production variant: the node budget sized from the previous step's
        # rows is lossless (a decision never reads the drafts it admits); the fresh-row argmax stop reads
        # them (the batch firewall fails), so it is reported beside it, not as the result.
        sched = table["dspark_tree_stale"][i]
        rows.append({
            "load": load, "scheduled": sched, "dspark_chain": ds, "best_fixed_tree": best_fixed,
            "best_fixed_name": best_name, "ratio": sched / max(ds, best_fixed),
            "fresh_ratio": table["dspark_tree_adaptive"][i] / max(ds, best_fixed),
            "fixed_shape_budget_ratio": table["dspark_tree"][i] / max(ds, best_fixed),
            "best_chain": max(table[k][i] for k in table if k.startswith("chain")),
        })  # fmt: skip
    return rows
