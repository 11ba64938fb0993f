"""Named cost tables that ship with specbed, and `load_cost` (a name or a CSV path).

All built-ins are roofline-synthesized (`specsched.hardware`): labelled "-like" where the model's shape
is an assumption. A measured profile (`specbed engine profile --out cost.csv`) always beats them.

May import: numpy, the standard library, specsched.cost, specsched.hardware, specsched.errors,
specsched.fit.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from specsched.cost import CostTable
from specsched.errors import InputError

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
}

BUILTIN_COSTS: tuple[str, ...] = tuple(_SPECS)


def builtin_gpus_per_replica(name: str) -> int:
    """GPUs behind one replica of a built-in table (for throughput per GPU)."""
    return _SPECS[name][2]


@cache
def builtin_cost(name: str) -> CostTable:
    """The built-in table `name` (see BUILTIN_COSTS). Cached: tables are immutable."""
    if name not in _SPECS:
        raise ValueError(f"unknown cost table {name!r} (built-in: {', '.join(BUILTIN_COSTS)})")
    model, gpu, tp, knobs = _SPECS[name]
    return CostTable.roofline(model, gpu, tp=tp, name=name, **knobs)


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
    if path.suffix.lower() == ".csv" or path.exists():
        return CostTable.from_csv(path, mode=mode)  # type: ignore[arg-type]
    raise InputError(
        f"unknown cost table {str(spec)!r}: not a built-in ({', '.join(BUILTIN_COSTS)}), "
        "a CSV or a fit .json",
        field="server.cost",
    )
