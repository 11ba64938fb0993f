"""Named cost tables that ship with specbed, and `load_cost` (a name or a CSV path).

All built-ins are roofline-synthesized (`specsched.price.roofline`): labelled "-like" where the model's shape
is an assumption. A measured profile (`specbed engine profile --out cost.csv`) always beats them.
Setups listed in `_GRAPHS` model an engine that replays CUDA graphs (`specsched.graphs`: padding to the
captured sizes, eager cliff past them).

May import: numpy, the standard library, specsched.cost, specsched.graphs, specsched.price,
specsched.io.errors, specsched.fit.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from specsched.cost import CostTable
from specsched.graphs import with_cudagraphs
from specsched.io.errors import InputError

_CTX = {"context_tokens": None}
# The V4-like tables keep a fixed 4,096-token context per request: it stands for the context of a
# disaggregated decode instance, which the figures' 16-token prompts do not carry (paper_figs.common).
_EP_NET = {"context_tokens": 4096, "link_bw": 60e9, "overlap_comm": True}

#: name -> (model shape, gpu, GPUs per replica, roofline knobs)
_SPECS: dict[str, tuple[str, str, int, dict]] = {
    # Dense tables are context-aware: each step is charged its requests' actual KV context. At the
    # 1,024-token context they used to assume for every request, their step times are unchanged.
    "h100-dense8b": ("dense-8b", "h100", 1, _CTX),
    "h200-dense8b": ("dense-8b", "h200", 1, _CTX),
    "h100-dense70b-tp4": ("dense-70b", "h100", 4, _CTX),
    "h200-dense70b-tp4": ("dense-70b", "h200", 4, _CTX),
    # The same two models on B200 (capacity planning across GPU kinds: `specbed search`).
    "b200-dense8b": ("dense-8b", "b200", 1, _CTX),
    "b200-dense70b-tp4": ("dense-70b", "b200", 4, _CTX),
    # V4-like MoE, served DeepSeek-style: data-parallel attention, experts spread over a large EP group
    # across nodes, dispatch/combine overlapped with compute (two micro-batches). These tables are per GPU
    # (one DP rank's batch); "concurrency" in the paper's Fig. 8 is per rank. Context length, the
    # all-to-all bandwidth and latency are not published: they are fitted (paper_figs/REPRODUCTION.md) so
    # that MTP-1 lands near the paper's Fig. 7 operating points — V4-Flash ≈ 10.6k tok/s/GPU at 80
    # tok/s/user, V4-Pro ≈ 3.7k at 35 — while keeping DSpark's verify budget near Fig. 8 (≈5 → 3.5 from
    # 20 to 200 requests). The two pull apart (cheap verify tokens help Fig. 7, dear ones Fig. 8); these
    # values split the difference.
    "h200-v4flash": ("moe-284b-a13b", "h200", 1, dict(_EP_NET, ep=32, link_latency=110e-6)),
    "h200-v4pro": ("moe-1.6t-a49b", "h200", 1, dict(_EP_NET, ep=64, link_latency=200e-6)),
    # vLLM's adaptive-verification blog setup (2026-08-14): DeepSeek-V4-Pro, TP 8 + expert parallel on one
    # 8×B300 NVLink node, one batch over all 8 GPUs (so tp=8: each GPU reads 1/8 of the weights that the
    # batch touches and does 1/8 of its FLOPs), NVLink 5 at 900 GB/s per direction, KV read at the blog's
    # 8,192-token profiling context. FITTED to the blog by simulating its sweep (paper_figs/REPRODUCTION.md,
    # "vLLM adaptive verification"):
    # - eta_f = 0.0573 (an effective compute efficiency; it folds in attention over 8K of context, the
    #   sparse-attention indexer and MoE GEMM inefficiency) with the scale of the draft table
    #   (paper_figs/data/b300x8-v4pro-draft.csv, given as `drafter.cost`): adaptive's 26.0 ms per token at
    #   concurrency 256;
    # - expert_locality ρ = 0.8 over a request's 8-token block (hardware.py, "Expert locality"): an
    #   EFFECTIVE number — it also stands for routing skew — set to the smallest of 0.5 / 0.7 / 0.8 at which
    #   adaptive ties fixed 7 at concurrency 1 within 2 % (the blog: "the whole block is free" there, both
    #   at 264 tok/s). We found no published per-token expert overlap for V4; uniform routing (ρ = 0)
    #   makes 8 verify tokens read ~2× the experts of 4 and adaptive trims (−4.5 %);
    # - c0 = 104 µs per layer, after ρ: a concurrency-1 step verifying all 7 drafts takes 3.40 × 3.7 ms
    #   (the blog's TPOT there at τ ≈ 3.4). It absorbs what the roofline leaves out at one request
    #   (launches, MoE routing, sampling); no speculation at concurrency 1 is therefore a prediction (8.2 ms).
    "b300x8-v4pro": (
        "moe-1.6t-a49b",
        "b300",
        8,
        {"context_tokens": 8192, "link_bw": 900e9, "c0": 104e-6, "eta_f": 0.0573, "expert_locality": 0.8},
    ),
}

#: setups whose engine replays CUDA graphs: name -> (max_cudagraph_capture_size, eager factor, eager growth)
#: (`graphs.with_cudagraphs`). The blog ran max_cudagraph_capture_size = 1024. The eager factor 1.25 and its
#: growth 0.45 per 1,024 tokens past the limit are FITTED together (scanned 1.56/0, 1.2/1.0, 1.3/0.35,
#: 1.2/0.6, 1.25/0.45) to the blog's two figures at concurrency 256 — fixed k = 5 and 6 "26 % below no
#: speculation", k = 7 "53 % below" — since one constant factor cannot give both (k = 7 runs 2,048 tokens,
#: k = 5 and 6 1,536 and 1,792). The blog's one measured jump (V4-Flash TP 4, 20.6 → 104 ms, ×5.05,
#: `graphs.EAGER_FACTOR`) is for another model and TP and overshoots on this table.
_GRAPHS: dict[str, tuple[int, float, float]] = {"b300x8-v4pro": (1024, 1.25, 0.45)}

BUILTIN_COSTS: tuple[str, ...] = tuple(_SPECS)


def builtin_gpus_per_replica(name: str) -> int:
    """GPUs behind one replica of a built-in table (for throughput per GPU)."""
    return _SPECS[name][2]


def builtin_gpu(name: str) -> str:
    """The GPU kind of a built-in table (a key of `specsched.price.GPUS`: "h100", "h200", ...)."""
    return _SPECS[name][1]


@cache
def builtin_cost(name: str, *, graphs: bool = True) -> CostTable:
    """The built-in table `name` (see BUILTIN_COSTS). Cached: tables are immutable.

    graphs=False: without its CUDA-graph padding and eager cliff (for re-padding to other capture sizes);
    the same table for setups that model none.
    """
    if name not in _SPECS:
        raise ValueError(f"unknown cost table {name!r} (built-in: {', '.join(BUILTIN_COSTS)})")
    model, gpu, tp, knobs = _SPECS[name]
    table = CostTable.roofline(model, gpu, tp=tp, name=name, **knobs)
    if graphs and name in _GRAPHS:
        limit, eager, growth = _GRAPHS[name]
        table = with_cudagraphs(
            table, max_capture_size=limit, eager_factor=eager, eager_growth=growth, name=name
        )
    return table


def builtin_graphs(name: str) -> tuple[int, float, float] | None:
    """(max_cudagraph_capture_size, eager factor, eager growth) of a built-in setup that models CUDA graphs,
    else None."""
    return _GRAPHS.get(name)


def load_cost(
    spec: str | Path, *, mode: str = "step", tp: int | None = None, ep: int | None = None
) -> CostTable:
    """A built-in table by name, a `tokens,seconds` CSV by path, or a fit file (`specbed cost fit`'s
    FIT.json) priced for a `tp`-GPU replica with `ep`-way expert parallelism (both default 1; they
    apply to fit files only). InputError if none of these."""
    if isinstance(spec, str) and spec in _SPECS:
        return builtin_cost(spec)
    path = Path(spec)
    if path.suffix.lower() == ".json":
        from specsched.fit import fit_table, load_fit  # a fit file: the roofline with its knobs

        fitted = load_fit(path)
        try:
            return fit_table(fitted, tp=tp or 1, ep=ep or 1)
        except ValueError as err:
            raise InputError(str(err), file=str(path)) from None
    if path.suffix.lower() == ".csv" or os.sep in str(spec) or os.path.exists(path):  # never raises
        return CostTable.from_csv(path, mode=mode)  # type: ignore[arg-type]
    raise InputError(
        f"unknown cost table {str(spec)!r}: not a built-in ({', '.join(BUILTIN_COSTS)}), "
        "a CSV or a fit .json",
        field="cost.table",
    )
