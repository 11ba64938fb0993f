"""specsched.price — the price of a step on one floor: the catalogue, the knobs and the formulas.

One table of GPUs and links (`gpus`), one table of models (`models`), one set of knobs (`knobs`), the
roofline (`roofline`), vLLM's KV sizing (`kv`) and a vLLM step (`vllm`), an expert-parallel group (`ep`),
a drafter priced from its shape (`draft_shape`, `spec_engine`). Where a deployment lives: priced here,
run in `sim/deploy`. Pure numpy and the standard library.

This package's `__init__` loads only the tables, knobs, roofline and KV sizing (the modules below
`specsched.cost`); import `specsched.price.vllm`, `.ep`, `.draft_shape` by name.

May import: numpy, the standard library, `specsched` (errors, inputs, cost, graphs, comm, draft_cost).
"""

from specsched.price.gpus import GPU, GPUS, LINKS, Link, find_gpu, get_gpu, get_link
from specsched.price.knobs import DEFAULTS, Knobs, shipped_knobs, transferred_knobs
from specsched.price.kv import GPU_MEMORY_UTILIZATION, KVSizing, check_utilization, size_kv
from specsched.price.models import (
    MODELS,
    PRECISIONS,
    Attention,
    ModelShape,
    find_model,
    get_model,
    precision_bytes,
)
from specsched.price.roofline import kv_token_seconds, request_seconds, step_seconds

__all__ = [
    "DEFAULTS", "GPU", "GPUS", "GPU_MEMORY_UTILIZATION", "LINKS", "MODELS", "PRECISIONS", "Attention",
    "KVSizing", "Knobs", "Link", "ModelShape", "check_utilization", "find_gpu", "find_model", "get_gpu",
    "get_link", "get_model", "kv_token_seconds", "precision_bytes", "request_seconds", "shipped_knobs",
    "size_kv", "step_seconds", "transferred_knobs"
]  # fmt: skip
