"""The cell model of `specbed search`: one job (`analysis.search.early`'s docstring) run to its end or
to its early stop.

Role: `SearchModel.run(job) -> summary`, picklable and stateless, so `analysis.runner.execute` runs it on
any backend; a colocated candidate runs `sim.run` under an `analysis.search.early.Watch`, a disaggregated
one `analysis.search.pools.run_job`.

May import: the standard library, `analysis.model`, `analysis.search` (early, pools, slo), `sim` (lazily).
"""

from __future__ import annotations

import time

from analysis.model import flatten, scalar_summary, set_text
from analysis.search.early import StopRun, Watch, peak_running
from analysis.search.pools import run_job
from analysis.search.slo import parse_slo


class SearchModel:
    """The cell model of a search: runs one job (module docstring); picklable, no state."""

    name = "sim-search"

    def run(self, job: dict) -> dict:
        if "pool" in job["sim"]:  # a disaggregated candidate: sim.disagg, run to the end
            return run_job(job)
        from sim.config_io import load_config
        from sim.run import prepare, results
        from sim.wiring import run_pool

        cfg = load_config(None, [f"{k}={set_text(v)}" for k, v in flatten(job["sim"]).items()])
        start = time.perf_counter()
        prep = prepare(cfg)
        stop = job.get("stop")
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
