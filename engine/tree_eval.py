"""τ of draft trees beside chains on the small models: the table `specbed engine eval --trees N` adds.

Role: decode N held-out prompts per domain with tree speculative decoding (engine.tree_decode) at the eval's
γ and temperature, for a chain (topk 1) and trees (topk 2 and 3, depth γ, node caps), and report τ per
domain, for each tree drafter: the self-speculative drafter of the checkpoint's target (its first block and
head, `TinyLM.truncated(1)`) and every loaded EAGLE head (engine.tree_eagle: EAGLE-2-style trees drafted
over a tree mask; its chain row is the EAGLE chain). The DFlash/DSpark parallel blocks draft chains only.

May import: torch, stdlib, engine.tree_decode, engine.tree_eagle, engine.lm.eagle, engine.sampling,
engine.lm.data.
"""

from __future__ import annotations

from engine.lm.data import DOMAINS
from engine.lm.eagle import EagleDrafter
from engine.sampling import SamplingParams
from engine.tree_decode import TreeSpec, tree_generate
from engine.tree_eagle import EagleTree


def tree_specs(gamma: int) -> dict[str, TreeSpec]:
    """The compared shapes: a γ-chain and EAGLE-2-style trees of depth γ (uncapped, and capped at 2γ)."""
    return {
        f"chain g{gamma}": TreeSpec(1, gamma),
        f"tree k2 d{gamma}": TreeSpec(2, gamma),
        f"tree k3 d{gamma} n{2 * gamma}": TreeSpec(3, gamma, 2 * gamma),
    }


def tree_drafters(bundle, target) -> dict[str, tuple[str, object]]:
    """{label: (what it is, tree drafter)}: "self" (target.truncated(1)) and every loaded EAGLE head."""
    out: dict[str, tuple[str, object]] = {"self": ("target.truncated(1)", target.truncated(1))}
    for name in bundle.names():
        net = bundle.net(name)
        if isinstance(net, EagleDrafter):
            out[name] = (f"{name} head, EAGLE-2 tree mask", EagleTree(net, target))
    return out


def tree_taus(bundle, corpus, cfg, progress=None) -> dict:
    """{"drafters": {label: what}, "specs": {shape: (topk, depth, nodes)}, "tau": {"label shape": {domain:
    τ, "mean": τ}}}; every row decodes the same prompts with the same noise seed."""
    target = bundle.target(cfg.device)
    params = SamplingParams(cfg.temperature)
    specs = tree_specs(cfg.gamma)
    drafters = tree_drafters(bundle, target)
    rows = [(label, shape) for label in drafters for shape in specs]
    tau: dict = {f"{label} {shape}": {} for label, shape in rows}
    for i, dom in enumerate(DOMAINS):
        prompts = corpus.prompts(dom, cfg.trees, cfg.prompt_len, cfg.seed + i, split=cfg.split)
        for label, shape in rows:
            _, steps, emitted = tree_generate(
                target, drafters[label][1], prompts, cfg.new_tokens, specs[shape], params, seed=cfg.seed + i
            )
            tau[f"{label} {shape}"][dom] = emitted / steps
            if progress:
                progress(f"trees {label} {shape}/{dom}: tau {emitted / steps:.3f}")
    for row in tau.values():
        row["mean"] = sum(row[d] for d in DOMAINS) / len(DOMAINS)
    shapes = {n: (s.topk, s.depth, s.nodes) for n, s in specs.items()}
    return {"drafters": {label: d[0] for label, d in drafters.items()}, "specs": shapes, "tau": tau}


def format_trees(res: dict) -> list[str]:
    """The report lines of `tree_taus`'s result."""
    who = "; ".join(f"{label} = {what}" for label, what in res["drafters"].items())
    lines = ["", f"Trees vs chains: tau per drafter ({who}), same prompts"]
    lines.append(f"{'drafter shape':<26}" + "".join(f"{d:>9}" for d in (*DOMAINS, "mean")))
    for name, row in res["tau"].items():
        lines.append(f"{name:<26}" + "".join(f"{row[d]:>9.3f}" for d in (*DOMAINS, "mean")))
    return lines
