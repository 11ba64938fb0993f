"""Engine effects in cost tables: CUDA-graph padding inside the captured sizes, the eager cliff past them.

Role: turn any `CostTable` — a roofline or a measured profile — into what an engine that replays captured
CUDA graphs actually pays (vLLM's adaptive-verification blog, 2026-08-14, "The cost model"):

- padding: a step of B tokens with B ≤ the largest captured size runs the smallest captured graph of at
  least B tokens and pays for all of it (121 tokens run the 128-token graph): cost is a staircase;
- the cliff: past the largest captured size the step runs eagerly (kernels launched one by one from the
  host) and costs `eager_factor` × the graph cost of the same B — a sharp jump, continuous above it.
  The blog's one figure for it, V4-Flash at TP 4: verify 20.6 ms at the capture limit → 104 ms just past
  it, a factor ≈ 5 (`EAGER_FACTOR`).
- eager growth (optional, `eager_growth` g ≥ 0, 0 by default): the factor itself rises with the tokens past
  the limit L, eager_factor · (1 + g·(B − L)/L). An empirical form, not a mechanism: the blog's fixed
  k = 7 at 256 requests (2,048 tokens, 2 L) falls twice as far below no speculation as k = 5 and 6
  (1.5–1.75 L), which one constant factor cannot give (paper_figs/REPRODUCTION.md, "vLLM").

The result is an ordinary step-mode `CostTable` (points at every captured size, then at every integer B up
to `max(16384, 2·limit)`, linear beyond), so the policies, the simulator and `to_csv` need nothing new.

May import: numpy, the standard library, `specsched.cost`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from specsched.cost import CostTable

#: vLLM's default `max_cudagraph_capture_size` (compilation config) when none is given
DEFAULT_MAX_CAPTURE = 512
#: graph cost × this past the capture limit: the blog's V4-Flash TP 4 jump, 104 ms / 20.6 ms
EAGER_FACTOR = 104.0 / 20.6
#: eager points are tabulated per token up to at least this many tokens (vLLM's largest usual budget)
_EAGER_SPAN = 16_384


def vllm_capture_sizes(max_size: int = DEFAULT_MAX_CAPTURE) -> tuple[int, ...]:
    """vLLM's default CUDA-graph capture sizes (tokens) up to `max_size`: 1, 2, 4, every 8 below 256,
    every 16 from 256 (vllm/config: `max_cudagraph_capture_size` without explicit `cudagraph_capture_sizes`).
    """
    if int(max_size) != max_size or max_size < 1:
        raise ValueError(f"max_cudagraph_capture_size must be a whole number ≥ 1, got {max_size!r}")
    m = int(max_size)
    sizes = [s for s in (1, 2, 4) if s <= m]
    sizes += range(8, min(m + 1, 256), 8)
    sizes += range(256, m + 1, 16)
    return tuple(sizes)


def vllm_max_capture(max_num_seqs: int) -> int:
    """vLLM's largest captured size for a server of `max_num_seqs` when none is given: min(2·max_num_seqs,
    512) (vllm/config, compilation: the one capture rule every vLLM deployment here uses)."""
    return min(2 * int(max_num_seqs), DEFAULT_MAX_CAPTURE)


def check_capture_sizes(sizes: Sequence[int]) -> tuple[int, ...]:
    """The sizes as a sorted tuple of distinct whole numbers ≥ 1 (ValueError naming the bad one)."""
    out = []
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, (int, float, np.integer)) or int(s) != s or s < 1:
            raise ValueError(f"capture sizes must be whole numbers ≥ 1, got {s!r}")
        out.append(int(s))
    if not out:
        raise ValueError("capture sizes: empty (give at least one size)")
    return tuple(sorted(set(out)))


def with_cudagraphs(
    table: CostTable,
    capture_sizes: Sequence[int] | None = None,
    *,
    max_capture_size: int | None = None,
    eager_factor: float = EAGER_FACTOR,
    name: str | None = None,
    eager_growth: float = 0.0,
) -> CostTable:
    """`table` as an engine with captured CUDA graphs pays it (see the module docstring).

    capture_sizes: the captured token counts; None = `vllm_capture_sizes(max_capture_size)`, and with both
        given the sizes above `max_capture_size` are dropped (vLLM's rule; the smallest is always kept).
        eager_factor ≥ 1: eager cost over graph cost just past the limit; eager_growth ≥ 0: how much that
        factor rises per limit's worth of tokens past it (module docstring). The draft, per-request,
        per-KV-token, per-attention-pair and layer fields are kept. Applying it to a table that already is
        one re-pads the padded costs (idempotent on the same sizes).
    """
    if not (math.isfinite(eager_factor) and eager_factor >= 1.0):
        raise ValueError(f"eager_factor must be a number ≥ 1, got {eager_factor!r}")
    if not (math.isfinite(eager_growth) and eager_growth >= 0.0):
        raise ValueError(f"eager_growth must be a number ≥ 0, got {eager_growth!r}")
    if capture_sizes is None:
        sizes = vllm_capture_sizes(DEFAULT_MAX_CAPTURE if max_capture_size is None else max_capture_size)
    else:
        sizes = check_capture_sizes(capture_sizes)
        if max_capture_size is not None:
            sizes = tuple(s for s in sizes if s <= max_capture_size) or sizes[:1]
    limit = sizes[-1]
    captured = np.asarray(sizes, dtype=np.int64)
    eager = np.arange(limit + 1, max(_EAGER_SPAN, 2 * limit, int(table.tokens[-1])) + 1, dtype=np.int64)
    tokens = np.concatenate([captured, eager])
    factor = eager_factor * (1.0 + eager_growth * (eager - limit) / limit)
    seconds = np.concatenate([table.latency(captured), factor * table.latency(eager)])
    return CostTable.from_points(
        tokens,
        seconds,
        mode="step",
        draft_seconds=table.draft_seconds,
        layers=table.layers,
        name=name or f"{table.name}+graphs≤{limit}",
        request_seconds=table.request_seconds,
        kv_token_seconds=table.kv_token_seconds,
        attn_pair_seconds=table.attn_pair_seconds,
    )
