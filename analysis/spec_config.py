"""vLLM's `--speculative-config` for a resolved simulator config: one place for the mapping that the
search's launch lines (`analysis.search.launch`), `specbed plan --draft-schedule`
(`analysis.draft_schedule`) and `specbed advise` write.

The keys are vLLM's: `method`, `model` (the draft model, where the method needs one) and
`num_speculative_tokens`; a draft LM in `drafter.model` (`specsched.draft_lm`) is method "draft_model" with
its Hugging Face id; confidence-scheduled policies (`adaptive_verification` in `specsched.registry`) set
`enable_adaptive_verification` (vLLM's DSpark scheduling, PR #47808). Names the caller does not give are
left as <PLACEHOLDERS>.

May import: the standard library, `specsched` (lazily).
"""

from __future__ import annotations

#: simulator drafter -> vLLM speculative method; the methods that need a draft model
METHODS = {"mtp": "mtp", "eagle3": "eagle3", "dflash": "dflash", "dspark": "dspark", "ngram": "ngram"}
NEEDS_MODEL = ("eagle3", "dflash", "dspark")


def _adaptive(name: str) -> bool:
    """Whether vLLM runs policy `name` as confidence-scheduled verification (`specsched.registry`)."""
    from specsched.registry import get

    return get(name).adaptive_verification


def _draft_lm(name: str | None) -> str | None:
    """The Hugging Face id of `drafter.model` when it names a draft LM (None: a preset or unset)."""
    from specsched.draft_lm import hf_id, is_draft_lm

    return hf_id(name) if is_draft_lm(name) else None


def speculative_config(
    config: dict, draft_models: dict[str, str], schedule: list[dict] | None
) -> dict | None:
    """vLLM's --speculative-config for the config (None: no speculation)."""
    drafter, policy = config["drafter"], config["policy"]
    name = drafter["name"]
    gamma = 0 if name == "none" else int(drafter["gamma"])
    if gamma == 0 or policy["name"] == "ar":
        return None
    spec: dict = {"method": METHODS.get(name, name)}
    if name in NEEDS_MODEL or name not in METHODS:
        spec["model"] = draft_models.get(name, f"<{name.upper()}_DRAFT_MODEL>")
    lm = _draft_lm(drafter.get("model"))
    if lm is not None:  # a separate small LM (specsched.draft_lm): vLLM's draft-model proposer
        spec = {"method": "draft_model", "model": lm}
    k = gamma
    if policy["name"] == "fixed" and policy.get("k") is not None:
        k = int(policy["k"])
    if schedule:
        k = max(int(row["k"]) for row in schedule)
    spec["num_speculative_tokens"] = k
    if _adaptive(policy["name"]):
        spec["draft_sample_method"] = "probabilistic"
        spec["enable_adaptive_verification"] = True
    return spec
