"""Upper bounds of the simulator's numeric config keys, checked before anything is allocated.

Role: one table of bounds (`UPPER_BOUNDS`) and the check every config section runs in `__post_init__`
(`check_bounds`), so a huge value is refused in one line naming its key instead of exhausting memory or
overflowing int64 later. Documented in the README ("Bad input and bounds").

May import: the standard library, `specsched.errors`.
"""

from __future__ import annotations

from dataclasses import fields

from specsched.errors import InputError

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
    "drafter.gamma": 64,
    "drafter.layers": 1024,
    "drafter.layer_cost": 1000.0,
    "policy.k": 64,
    "policy.threshold": 1.0,
    "policy.delay": 64,  # steps of confidence history kept per running request
    "server.replicas": 4096,
    "server.tp": 4096,
    "server.layers": 1024,
    "server.max_num_seqs": 16_384,
    "server.max_num_batched_tokens": 1 << 20,  # = specsched.cost.MAX_TOKENS, the largest table size
    "server.kv_tokens": 10**12,
    "server.prefill_request_seconds": 3600.0,
    "server.max_cudagraph_capture_size": 1 << 16,  # eager points are tabulated per token up to 2× it
    "server.cudagraph_capture_sizes": 1 << 16,
    "server.eager_factor": 1000.0,
    "metrics.slo_ttft_s": 1e7,
    "metrics.slo_tpot_s": 1e7,
    "metrics.series_bins": 1_000_000,
}
DEFAULT_INT_MAX = 10**9
DEFAULT_FLOAT_MAX = 1e12


def check_bounds(section: str, obj) -> None:
    """Every numeric field of dataclass `obj` ≤ its UPPER_BOUNDS entry; InputError naming the key if not."""
    for f in fields(obj):
        values = getattr(obj, f.name)
        dotted = f"{section}.{f.name}" if section else f.name
        for value in values if isinstance(values, tuple) else (values,):
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            default = DEFAULT_INT_MAX if isinstance(value, int) else DEFAULT_FLOAT_MAX
            bound = UPPER_BOUNDS.get(dotted, default)
            if value > bound:
                shown = f"{bound:,}" if isinstance(bound, int) else f"{bound:g}"
                raise InputError(f"must be ≤ {shown} (its upper bound); got {value!r}", field=dotted)
