"""`engine eval --trees N`: τ for trees beside chains on the shipped small target, for the self-speculative
drafter and the shipped EAGLE head."""

from engine.lm.checkpoint import corpus_for, load_bundle
from engine.lm.data import DOMAINS
from engine.measure.evaluate import EvalConfig
from engine.tree_eval import format_trees, tree_specs, tree_taus


def test_tree_taus_on_the_shipped_target():
    bundle = load_bundle("engine/checkpoints", ["eagle1"])
    cfg = EvalConfig(prompts=1, prompt_len=16, new_tokens=6, gamma=2, trees=1)
    res = tree_taus(bundle, corpus_for(bundle), cfg)
    assert set(res["drafters"]) == {"self", "eagle1"}
    assert set(res["tau"]) == {f"{d} {s}" for d in ("self", "eagle1") for s in tree_specs(2)}
    for row in res["tau"].values():
        assert set(row) == {*DOMAINS, "mean"} and all(1.0 <= v <= 4.0 for v in row.values())
    text = "\n".join(format_trees(res))
    assert "Trees vs chains" in text and "eagle1 tree k2 d2" in text
