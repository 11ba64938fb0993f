"""`engine eval --trees N`: τ for trees beside chains on the shipped small target (self-speculative)."""

from engine.lm.checkpoint import corpus_for, load_bundle
from engine.lm.data import DOMAINS
from engine.measure.evaluate import EvalConfig
from engine.tree_eval import format_trees, tree_specs, tree_taus


def test_tree_taus_on_the_shipped_target():
    bundle = load_bundle("engine/checkpoints")
    cfg = EvalConfig(prompts=1, prompt_len=16, new_tokens=6, gamma=2, trees=1)
    res = tree_taus(bundle, corpus_for(bundle), cfg)
    assert set(res["tau"]) == set(tree_specs(2))
    for row in res["tau"].values():
        assert set(row) == {*DOMAINS, "mean"} and all(1.0 <= v <= 4.0 for v in row.values())
    assert "Trees vs chains" in "\n".join(format_trees(res))
