"""τ of draft trees beside chains on the small models: the table `specbed engine eval --trees N` adds.

Role: decode N held-out prompts per domain with tree speculative decoding (engine.tree_decode) using the
self-speculative drafter of the checkpoint's target (its first block and head, `TinyLM.truncated(1)`: the
one small drafter that can expand a tree; the EAGLE/DFlash heads draft chains only) at the eval's γ and
temperature, for a chain (topk 1) and trees (topk 2 and 3, depth γ, node caps), and report τ per domain.

May import: torch, stdlib, engine.tree_decode, engine.sampling, engine.lm.data.
"""

from __future__ import annotations

from engine.lm.data import DOMAINS
from engine.sampling import SamplingParams
from engine.tree_decode import TreeSpec, tree_generate


def tree_specs(gamma: int) -> dict[str, TreeSpec]:
    """The compared shapes: a γ-chain and EAGLE-2-style trees of depth γ (uncapped, and capped at 2γ)."""
    return {
        f"chain g{gamma}": TreeSpec(1, gamma),
        f"tree k2 d{gamma}": TreeSpec(2, gamma),
        f"tree k3 d{gamma} n{2 * gamma}": TreeSpec(3, gamma, 2 * gamma),
    }


def tree_taus(bundle, corpus, cfg, progress=None) -> dict:
    """{"drafter": ..., "specs": {name: (topk, depth, nodes)}, "tau": {name: {domain: τ, "mean": τ}}}."""
    target = bundle.target(cfg.device)
    drafter = target.truncated(1)
    params = SamplingParams(cfg.temperature)
    specs = tree_specs(cfg.gamma)
    tau: dict = {name: {} for name in specs}
    for i, dom in enumerate(DOMAINS):
        prompts = corpus.prompts(dom, cfg.trees, cfg.prompt_len, cfg.seed + i, split=cfg.split)
        for name, spec in specs.items():
            _, steps, emitted = tree_generate(
                target, drafter, prompts, cfg.new_tokens, spec, params, seed=cfg.seed + i
            )
            tau[name][dom] = emitted / steps
            if progress:
                progress(f"trees {name}/{dom}: tau {tau[name][dom]:.3f}")
    for name in specs:
        tau[name]["mean"] = sum(tau[name][d] for d in DOMAINS) / len(DOMAINS)
    shapes = {n: (s.topk, s.depth, s.nodes) for n, s in specs.items()}
    return {"drafter": "target.truncated(1)", "specs": shapes, "tau": tau}


def format_trees(res: dict) -> list[str]:
    """The report lines of `tree_taus`'s result."""
    lines = ["", f"Trees vs chains: tau with the self-speculative drafter ({res['drafter']}), same prompts"]
    lines.append(f"{'shape':<16}" + "".join(f"{d:>9}" for d in (*DOMAINS, "mean")))
    for name, row in res["tau"].items():
        lines.append(f"{name:<16}" + "".join(f"{row[d]:>9.3f}" for d in (*DOMAINS, "mean")))
    return lines
