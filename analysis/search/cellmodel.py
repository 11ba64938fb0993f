"""The cell model of `specbed search`: one job (`analysis.search.early`'s docstring) run to its end or
to its early stop, for a colocated or a pooled candidate alike.

Role: `SearchModel.run(job) -> summary`, picklable and stateless, so `analysis.runner.execute` runs it on
any backend. A colocated candidate runs `sim.wiring.run_pool` under an `analysis.search.early.Watch`; a
pooled one (`[[pool]]` tables: `analysis.search.pools`) runs `sim.disagg.simulate_disagg` under the
same watch of the fleet (its prefill stage on TTFT and E2E when the window is known up front, its decode
stage on every head: `simulate_disagg`). Either way the summary is the simulator's
(`analysis.model.scalar_summary`: a fleet's has `specbed run`'s keys, its pools summed) plus `stopped`.

May import: the standard library, `analysis.model`, `analysis.search` (early, pools, slo), `sim` (lazily).
"""

from __future__ import annotations

import time

from analysis.model import flatten, scalar_summary, set_text
from analysis.search.early import StopRun, Watch, peak_running
from analysis.search.pools import disagg_config
from analysis.search.slo import parse_slo


class SearchModel:
    """The cell model of a search: runs one job (module docstring); picklable, no state."""

    name = "sim-search"

    def run(self, job: dict) -> dict:
        stop = job.get("stop")
        if "pool" in job["sim"]:
            return _fleet(job["sim"], stop)
        from sim.config_io import load_config
        from sim.run import prepare, results
        from sim.wiring import run_pool

        cfg = load_config(None, [f"{k}={set_text(v)}" for k, v in flatten(job["sim"]).items()])
        start = time.perf_counter()
        prep = prepare(cfg)
        watch = None
        if stop and cfg.workload.kind != "closed":
            watch = Watch(prep, parse_slo(stop["slo"]), float(stop["tol"]))
        loop = time.perf_counter()
        try:
            rec = run_pool(prep, watch=watch)
        except StopRun as why:
            return {"stopped": why.reason, "stopped_at_s": why.now, "requests_total": len(prep.workload),
                    "peak_running": watch.peak}  # fmt: skip
        summary = scalar_summary(results(prep, rec, start, loop).summary)
        summary["stopped"] = None
        summary["peak_running"] = peak_running(rec)
        return summary


def _fleet(config: dict, stop: dict | None) -> dict:
    """A pooled job's summary (module docstring), or {"stopped": why, ...} when the fleet already lost a
    term of its SLO."""
    from sim.disagg.run import simulate_disagg

    cfg = disagg_config(config)
    watch = None
    if stop:
        slo, tol = parse_slo(stop["slo"]), float(stop["tol"])
        watch = lambda prep, heads: Watch(prep, slo, tol, heads=heads)  # noqa: E731
    try:
        summary = scalar_summary(simulate_disagg(cfg, watch=watch).summary)
    except StopRun as why:
        total = cfg.base.workload.num_requests
        return {"stopped": why.reason, "stopped_at_s": why.now, "requests_total": total}
    summary["stopped"] = None
    return summary
