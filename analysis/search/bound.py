"""The price bound of `specbed search`: price tiers, and dropping candidates that cannot rank in the top.

Role: every deployment that meets the SLO carries the same traffic, so its throughput (output tokens per
second of the measured window) is the traffic's output rate, up to where its window starts; its cost per
million tokens is then its price (USD per hour of all its GPUs) over that common throughput. The search
therefore judges candidates cheapest first, in **price tiers** (`tier`: every candidate still to judge
whose price is within (1 + slack) of the `top`-th cheapest such price, so a tier holds at least `top`;
a tier runs through all the rungs before the next starts), and after each tier drops (`prune`) every
candidate still to judge that cannot rank in the top `top` — of its halving group when `[search]
group` is given — even if it met the SLO:

    its cost ≥ price ÷ (1 + slack)·T,   T = the highest throughput of any full-length run that met the SLO

above the `top`-th best full-length cost (both at the ranking's 3 significant digits: an equal one is a
tie, broken by the SLO margin, so it is kept). The assumption, stated with every drop, is that no
SLO-meeting deployment's throughput exceeds T by more than `slack` (default 10 %; measured spreads are a
fraction of a percent, bench/bench_search.py prints it). With `objective = "goodput_per_gpu"` the tiers
go by GPU count and the bound is goodput/GPU ≤ (1 + slack)·T ÷ GPUs. Tiers and drops depend only on
prices and on finished runs' summaries, never on the order runs finish in.

May import: the standard library.
"""

from __future__ import annotations

import math


def price_of(c) -> float:
    """USD per hour of all the candidate's GPUs."""
    return c.usd_per_hour * c.gpus


def _order(c, objective: str) -> float:
    return price_of(c) if objective == "cost" else float(c.gpus)


def tier(pending: list, objective: str, slack: float, top: int) -> list:
    """The candidates of the next price tier (module docstring), in the space's order."""
    orders = sorted(_order(c, objective) for c in pending)
    low = orders[min(max(top, 1), len(orders)) - 1]
    return [c for c in pending if _order(c, objective) <= low * (1.0 + slack) + 1e-9]


def _throughput(c) -> float:
    t = c.summary.get("throughput_tok_s")
    return float(t) if isinstance(t, (int, float)) and math.isfinite(t) and t > 0 else math.nan


def sig(x: float) -> float:
    """x at 3 significant digits (inf when not finite): values this close tie."""
    return float(f"{x:.3g}") if math.isfinite(x) else math.inf


def rank_key(c, slo, objective: str):
    """Sort key (smaller is better): the objective at 3 significant digits (closer is a tie), then the
    SLO margin (more headroom first), then the candidate's order in the space."""
    value = sig(c.cost) if objective == "cost" else -sig(c.goodput_per_gpu)
    return (value if math.isfinite(value) else math.inf, -slo.margin(c.summary), c.cell.index)


def group_of(c, keys: tuple[str, ...]) -> tuple:
    """The halving group of a candidate: its values of the `[search] group` keys ("series": its series)."""
    return tuple(c.cell.series if key == "series" else c.cell.axes.get(key) for key in keys)


def prune(cands: list, slo, options, last: int) -> int:
    """Drop every candidate not yet judged at full length that cannot rank in its group's top
    `options.top` (module docstring); returns how many were dropped."""
    if options.top <= 0:
        return 0
    done = [c for c in cands if c.alive and c.rung == last and slo.met(c.summary)]
    speeds = [t for t in map(_throughput, done) if math.isfinite(t)]
    if not speeds:
        return 0
    top_speed = max(speeds) * (1.0 + options.throughput_slack)
    groups: dict[tuple, list] = {}
    for c in done:
        groups.setdefault(group_of(c, options.group), []).append(c)
    dropped = 0
    for c in cands:
        if not c.alive or c.rung == last:
            continue
        best = groups.get(group_of(c, options.group), [])
        best = sorted(best, key=lambda d: rank_key(d, slo, options.objective))
        if len(best) < options.top:
            continue
        kth = best[options.top - 1]
        if options.objective == "cost":
            optimistic = price_of(c) / 3600.0 / top_speed * 1e6
            lost = sig(optimistic) > sig(kth.cost)
            what = (f"costs ≥ ${optimistic:.3f}/Mtok at ${price_of(c):.2f}/h, above #{options.top}'s "
                    f"${kth.cost:.3f}")  # fmt: skip
        else:
            optimistic = top_speed / max(c.gpus, 1)
            lost = sig(optimistic) < sig(kth.goodput_per_gpu)
            what = (f"goodput ≤ {optimistic:.0f} tok/s/GPU on {c.gpus} GPUs, below #{options.top}'s "
                    f"{kth.goodput_per_gpu:.0f}")  # fmt: skip
        if lost:
            c.alive = False
            c.reason = (
                f"price bound: cannot rank in the top {options.top}: {what} (throughput ≤ "
                f"{1 + options.throughput_slack:.2f} × {max(speeds):.0f} tok/s, the highest that met the SLO)"
            )
            dropped += 1
    return dropped
