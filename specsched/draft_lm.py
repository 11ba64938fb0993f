"""The draft-model drafter: a separate small LM from the catalogue drafting autoregressively.

Role: `draft_lm_shape(model)` is the `specsched.draft_shape.DrafterShape` of a catalogue model used as a
drafter (e.g. Llama-3.2-1B for Llama-3.1-70B, Qwen3-0.6B for Qwen3-8B): its own layers, width, heads, KV
and full LM head, no feature fusion. It is priced by the same terms as EAGLE (`draft_shape.own_draft_cost`):
K sequential passes over the drafting requests, the first over every verified position (the accepted
tokens are its prefill: vLLM's draft-model proposer runs the EAGLE proposer's `propose` path), its KV read
each pass, its weights sharded over the target's TP (vLLM requires the draft TP to equal the target's) with
two all-reduces a layer and the LM head's gather.

May import: the standard library, `specsched.catalog`, `specsched.draft_shape`.
"""

from __future__ import annotations

from specsched.catalog import CatalogModel
from specsched.draft_shape import DrafterShape


def draft_lm_shape(model: CatalogModel) -> DrafterShape:
    """A catalogue model as an autoregressive drafter with its own shape and LM head."""
    return DrafterShape(
        f"lm:{model.name}", "autoregressive", model.layers, model.hidden, model.intermediate, model.heads,
        model.kv_heads, model.head_dim, model.vocab, True, 0, 1, False,
        f"draft model {model.name} ({model.source})",
    )  # fmt: skip
