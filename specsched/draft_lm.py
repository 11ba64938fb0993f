"""The draft-model drafter: a separate small LM from the catalogue drafting autoregressively.

Role: `draft_lm_shape(model)` is the `specsched.price.draft_shape.DrafterShape` of a catalogue model used as a
drafter (e.g. Llama-3.2-1B for Llama-3.1-70B, Qwen3-0.6B for Qwen3-8B): its own layers, width, heads, KV
and full LM head, no feature fusion. It is priced by the same terms as EAGLE (`draft_shape.own_draft_cost`):
K sequential passes over the drafting requests, the first over every verified position (the accepted
tokens are its prefill: vLLM's draft-model proposer runs the EAGLE proposer's `propose` path), its KV read
each pass, its weights sharded over the target's TP (vLLM requires the draft TP to equal the target's) with
two all-reduces a layer and the LM head's gather.

`drafter_of(name, target)` resolves `drafter.model` for the simulator: a `draft_shape` preset (eagle3,
mtp, ...) or a draft LM (a catalogue model or one of `DRAFT_LMS`), so `specbed run` prices a draft-model
drafter; `sibling(target)` is the small LM of the target's family (Llama 3.x: Llama-3.2-1B; Qwen3:
Qwen3-0.6B), the draft model `specbed advise` sweeps. vLLM's method for it is "draft_model".

May import: the standard library, `specsched.price.models`, `specsched.price.draft_shape`,
`specsched.io.errors`.
"""

from __future__ import annotations

from specsched.io.errors import InputError
from specsched.price import ModelShape as CatalogModel
from specsched.price import find_model
from specsched.price.draft_shape import PRESETS, DrafterShape, drafter_shape

#: small LMs used only as drafters (not serving targets, so not in the catalogue): Hugging Face id ->
#: (layers, hidden, intermediate, heads, kv heads, head dim, vocab), from each model's config.json
DRAFT_LMS = {
    "meta-llama/Llama-3.2-1B-Instruct": (16, 2048, 8192, 32, 8, 64, 128256),  # tied embeddings
    "Qwen/Qwen3-0.6B": (28, 1024, 3072, 16, 8, 128, 151936),  # tied embeddings
}
_ALIASES = {"llama3.2-1b": "meta-llama/Llama-3.2-1B-Instruct", "meta-llama/llama-3.2-1b":
            "meta-llama/Llama-3.2-1B-Instruct", "qwen3-0.6b": "Qwen/Qwen3-0.6B"}  # fmt: skip


def draft_lm_shape(model: CatalogModel) -> DrafterShape:
    """A catalogue model as an autoregressive drafter with its own shape and LM head."""
    return DrafterShape(
        f"lm:{model.name}", "autoregressive", model.layers, model.hidden, model.intermediate, model.heads,
        model.kv_heads, model.head_dim, model.vocab, True, 0, 1, False,
        f"draft model {model.name} ({model.source})",
    )  # fmt: skip


def find_draft_lm(name: str) -> DrafterShape | None:
    """The drafter shape of `name`: a catalogue model, or one of `DRAFT_LMS` (by id or short alias)."""
    found = find_model(name)
    if found is not None:
        return draft_lm_shape(found)
    key = _ALIASES.get(name.lower(), name) if isinstance(name, str) else name
    key = next((k for k in DRAFT_LMS if k.lower() == str(key).lower()), None)
    if key is None:
        return None
    layers, hidden, inter, heads, kv, hd, vocab = DRAFT_LMS[key]
    return DrafterShape(f"lm:{key}", "autoregressive", layers, hidden, inter, heads, kv, hd, vocab, True,
                        source=f"draft model {key} (config.json)")  # fmt: skip


def get_draft_lm(name: str, *, field: str = "drafter_model") -> DrafterShape:
    """`find_draft_lm`, or InputError naming `field`."""
    found = find_draft_lm(name)
    if found is None:
        known = ", ".join(DRAFT_LMS)
        raise InputError(f"draft model {name!r} is in neither the catalogue nor {known}", field=field)
    return found


#: target family (the start of its catalogue name) -> its small sibling used as a draft model; a draft
#: model must share the target's tokenizer, so a family without a small sibling here gets none
SIBLINGS = {"llama3": "llama3.2-1b", "qwen3": "qwen3-0.6b"}


def sibling(target: CatalogModel) -> str | None:
    """The draft model of `target`'s family (`SIBLINGS`), else None; never the target itself."""
    for prefix, draft in SIBLINGS.items():
        if target.name.startswith(prefix) and not target.name.startswith(draft):
            return draft
    return None


def is_draft_lm(name: str | None) -> bool:
    """Whether `drafter.model` names a draft LM (not a `draft_shape` preset)."""
    return isinstance(name, str) and name.lower() not in PRESETS and find_draft_lm(name) is not None


def hf_id(name: str) -> str:
    """The Hugging Face id vLLM loads for draft LM `name` (its `--speculative-config` model)."""
    found = find_model(name)
    if found is not None and found.hf_ids:
        return found.hf_ids[0]
    key = _ALIASES.get(name.lower(), name)
    return next((k for k in DRAFT_LMS if k.lower() == key.lower()), name)


def drafter_of(name: str, target: CatalogModel, *, field: str = "drafter.model") -> DrafterShape:
    """`drafter.model` as a shape: a preset resolved against `target`, else a draft LM (InputError naming
    `field` when it is neither)."""
    if isinstance(name, str) and name.lower() in PRESETS:
        return drafter_shape(name, target, field=field)
    found = find_draft_lm(name) if isinstance(name, str) else None
    if found is None:
        raise InputError(
            f"must be a drafter preset ({', '.join(PRESETS)}) or a draft model ({', '.join(_ALIASES)}, a "
            f"catalogue model); got {name!r}",
            field=field,
        )
    return found
