"""Sibling candidates: deployments that differ only in `server.max_num_seqs` share one run while the cap
never binds.

Role: the engine admits a waiting request only while its replica holds fewer than `max_num_seqs`
requests (`sim.server`, `sim.steps`); nothing else in a colocated roofline run reads the cap. A run
whose `peak_running` (`analysis.search.early.peak_running`: the most requests a replica held at once,
an upper bound of the engine's own count; −1 after a preemption) stayed below its cap S never had an
admission refused, so the same config with any larger cap runs step for step the same — same random
streams, same steps, same stop — and its summary is that run's. A rung therefore runs each family of
siblings (`family`) smallest cap first, and a sibling with a larger cap takes the run of one whose cap
never bound (`covers`) instead of its own. Deployments built from vLLM's knobs (`cost.model`) size
their KV cache and CUDA graphs by `max_num_seqs` and disaggregated ones have a cap per pool: those are
families of one. tests/analysis/test_search.py checks a shared run against the sibling's own.

May import: the standard library, `analysis.sweepfile`.
"""

from __future__ import annotations

import copy

from analysis.sweepfile import config_key


def eligible(config: dict) -> bool:
    return "pool" not in config and not config.get("cost", {}).get("model")


def cap(config: dict) -> int:
    return int(config["server"]["max_num_seqs"])


def family(job: dict) -> str:
    """The key a job shares with its siblings: its config key without `server.max_num_seqs` (a job of
    its own when not eligible)."""
    sim = job["sim"]
    if not eligible(sim):
        return config_key(job)
    bare = copy.deepcopy(job)
    bare["sim"]["server"].pop("max_num_seqs", None)
    return config_key(bare)


def covers(summary: dict, seqs: int) -> bool:
    """True when a run with cap `seqs` never reached it (so every larger cap runs the same)."""
    peak = summary.get("peak_running")
    return isinstance(peak, int) and not isinstance(peak, bool) and 0 <= peak < seqs
