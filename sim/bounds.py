"""The checks every simulator config section runs in `__post_init__`, and its keys' upper bounds.

Role: `fail`, `check_choice`, `check_range` (one-line InputErrors naming `section.key`), and one table of
upper bounds (`UPPER_BOUNDS`) with its check (`check_bounds`), run before anything is allocated, so a huge
value is refused in one line naming its key instead of exhausting memory or
overflowing int64 later. Documented in docs/config.md (every key's bound) and docs/bad-input.md.

May import: the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

import math
from dataclasses import fields

from specsched.io.errors import InputError

#: Largest value accepted for each numeric key ("section.key" -> bound; for `workload.mix`, each share).
#: Checked when a config is built, i.e. before anything is allocated, and named in the error. A numeric
#: key missing here gets DEFAULT_INT_MAX / DEFAULT_FLOAT_MAX; add a line when a key needs its own.
#: The bounds keep every size the simulator allocates (requests × columns, batch × delay × γ history) and
#: every int64 sum of token counts far from memory and overflow limits.
UPPER_BOUNDS: dict[str, float] = {
    "seed": 2**63 - 1,
    "workload.rate": 1e6,  # arrivals / s
    "workload.cv": 100.0,
    "workload.concurrency": 1_000_000,
    "workload.think_s": 1e7,  # seconds
    "workload.num_requests": 10_000_000,
    "workload.input_tokens": 10_000_000,
    "workload.output_tokens": 10_000_000,
    "workload.input_cv": 100.0,
    "workload.output_cv": 100.0,
    "workload.max_input_tokens": 10_000_000,
    "workload.max_output_tokens": 10_000_000,
    "workload.mix": 1e6,
    "workload.speedup": 1e6,
    "workload.hash_block_tokens": 1_048_576,  # tokens per trace hash_ids block
    "drafter.gamma": 64,
    "drafter.layers": 1024,
    "drafter.layer_cost": 1000.0,
    "drafter.padded_context_seconds": 3600.0,
    "drafter.intake_seconds": 3600.0,
    "drafter.intake_tokens": 1e6,  # drafts verified per drafting request since it last drafted
    "drafter.topk": 64,  # children per tree node (candidates topk + (γ − 1)·topk² per request)
    "drafter.tree_nodes": 1 << 16,
    "drafter.rank_hit": 1.0,
    "drafter.tree_penalty": 100.0,
    "policy.k": 64,
    "policy.threshold": 1.0,
    "policy.delay": 64,  # steps of confidence history kept per running request
    "server.replicas": 4096,
    "server.tp": 4096,
    "server.max_num_seqs": 16_384,
    "server.max_num_batched_tokens": 1 << 20,  # = specsched.cost.MAX_TOKENS, the largest table size
    "server.kv_tokens": 10**12,
    "cost.layers": 1024,
    "cost.gpu_memory_utilization": 1.0,
    "cost.max_model_len": 10**8,
    "cost.cpu_offload_gb": 1e6,
    "cost.prefill_request_seconds": 3600.0,
    "cost.pad_token_seconds": 3600.0,
    "cost.padded_context_seconds": 3600.0,
    "cost.max_cudagraph_capture_size": 1 << 16,  # eager points are tabulated per token up to 2× it
    "cost.cudagraph_capture_sizes": 1 << 16,
    "cost.eager_factor": 1000.0,
    # disaggregated runs (sim.disagg.config): [[pool]] tables by role, and [handoff]
    "pool.prefill.replicas": 4096,
    "pool.prefill.tp": 4096,
    "pool.prefill.max_num_seqs": 16_384,
    "pool.prefill.max_num_batched_tokens": 1 << 20,
    "pool.prefill.kv_tokens": 10**12,
    "pool.decode.replicas": 4096,
    "pool.decode.tp": 4096,
    "pool.decode.max_num_seqs": 16_384,
    "pool.decode.max_num_batched_tokens": 1 << 20,
    "pool.decode.kv_tokens": 10**12,
    "pool.prefill.prefix_hit": 1.0,
    "pool.prefill.prefix_groups": 10**9,
    "pool.prefill.prefix_share": 1.0,
    "pool.decode.prefix_share": 1.0,
    "pool.decode.prefix_hit": 1.0,
    "pool.prefill.ep_gpus": 4096,
    "pool.prefill.attention_ranks": 4096,
    "pool.prefill.redundant_experts": 4096,
    "pool.prefill.micro_batches": 2,
    "pool.decode.micro_batches": 2,
    "pool.decode.ep_gpus": 4096,
    "pool.decode.attention_ranks": 4096,
    "pool.decode.redundant_experts": 4096,
    "pool.decode.expert_imbalance": 100.0,
    "pool.decode.attention_imbalance": 100.0,
    "pool.decode.context_tokens": 1e7,  # tokens
    "pool.decode.query_tokens": 65.0,  # 1 + γ at most
    "handoff.bandwidth": 1e15,  # bytes / s
    "handoff.latency": 3600.0,  # seconds
    "handoff.kv_bytes_per_token": 1e9,
    "handoff.streams": 4096,
    "metrics.slo_ttft_s": 1e7,
    "metrics.slo_tpot_s": 1e7,
    "metrics.series_bins": 1_000_000,
}
DEFAULT_INT_MAX = 10**9
DEFAULT_FLOAT_MAX = 1e12


def check_bounds(section: str, obj, names: dict[str, str] | None = None) -> None:
    """Every numeric field of dataclass `obj` ≤ its UPPER_BOUNDS entry; InputError naming the key if not.
    `names`: field -> its dotted key where that is not `section.field` (the `[cost]` keys of `[server]`)."""
    for f in fields(obj):
        values = getattr(obj, f.name)
        dotted = (names or {}).get(f.name) or (f"{section}.{f.name}" if section else f.name)
        for value in values if isinstance(values, tuple) else (values,):
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            default = DEFAULT_INT_MAX if isinstance(value, int) else DEFAULT_FLOAT_MAX
            bound = UPPER_BOUNDS.get(dotted, default)
            if value > bound:
                shown = f"{bound:,}" if isinstance(bound, int) else f"{bound:g}"
                raise InputError(f"must be ≤ {shown} (its upper bound); got {value!r}", field=dotted)


def fail(section: str, key: str, message: str) -> InputError:
    """An InputError naming `section.key` (just `key` at the top level)."""
    return InputError(message, field=f"{section}.{key}" if section else key)


def check_choice(section: str, key: str, value: str, choices: tuple[str, ...]) -> None:
    """value one of `choices`; InputError naming section.key otherwise."""
    if value not in choices:
        raise fail(section, key, f"must be one of {', '.join(choices)}; got {value!r}")


def check_range(section: str, key: str, value, lo=None, hi=None, *, lo_open=False, hi_open=False) -> None:
    """value within [lo, hi] (open ends as flagged), finite; InputError naming section.key otherwise."""
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(section, key, f"must be a finite number; got {value!r}")
    if lo is not None and (value <= lo if lo_open else value < lo):
        raise fail(section, key, f"must be {'>' if lo_open else '≥'} {lo}; got {value!r}")
    if hi is not None and (value >= hi if hi_open else value > hi):
        raise fail(section, key, f"must be {'<' if hi_open else '≤'} {hi}; got {value!r}")


def check_not_empty(section: str, key: str, value: str | None) -> None:
    """A file-naming key set to "" (or blanks) is an error: it would silently mean "no file"."""
    if value is not None and not value.strip():
        raise InputError("is empty: name a file, or none for the default", field=f"{section}.{key}")
