"""`specbed engine curves`: the engine's measured acceptance curves as a simulator curves file.

Role: turn `engine.measure.evaluate` results into a `specsched.contracts.curves.Curves` and save it through
the contract (`save_curves`: the format, its version and its checks live there, beside the reader the
simulator uses). Per simulator drafter name (eagle3, dflash, dspark) and simulator domain (the contract maps
our "prose" to "chat"): the measured per-position conditional acceptance, confidence stats (ECE/AUC of the
survival per position, raw and after STS, and the STS temperatures) where measured, and the measured
request-steps (the confidences the policy saw, accepted drafts, request id; at most `max_samples` rows per
domain, evenly spaced) that the simulator's acceptance.model "empirical" resamples. Values are clipped into
[0, 1]; a statistic with an undefined value at some position (AUC with one class only) is left out for that
domain.

May import: numpy, stdlib, specsched.contracts, engine.lm.data.
"""

from __future__ import annotations

from specsched.contracts.curves import MAX_SAMPLES, Curves, Samples, clipped
from specsched.contracts.domains import ENGINE_DOMAINS, sim_domain

DEFAULT_MAP = {"eagle3": "eagle1", "dflash": "dflash2", "dspark": "dspark2"}
SIM_DRAFTERS = ("mtp", "eagle3", "dflash", "dspark")
STAT_KEYS = ("ece_raw", "auc_raw", "ece_calibrated", "auc_calibrated")


def parse_map(text: str | None) -> dict[str, str]:
    """ "sim=engine,..." -> {sim drafter: engine drafter}; None -> DEFAULT_MAP."""
    if not text:
        return dict(DEFAULT_MAP)
    out = {}
    for item in text.split(","):
        sim_name, sep, eng = item.partition("=")
        if not sep or sim_name.strip() not in SIM_DRAFTERS or not eng.strip():
            raise ValueError(f"--map: expected sim=engine pairs with sim in {SIM_DRAFTERS}, got {item!r}")
        out[sim_name.strip()] = eng.strip()
    return out


def _domain_stats(d: dict, temps, gamma: int) -> dict[str, tuple[float, ...]]:
    """One domain's confidence stats: the defined ones of STAT_KEYS plus the first γ STS temperatures."""
    stats = {}
    for key in STAT_KEYS:
        vals = clipped(d[key]) if key in d else None
        if vals is not None:
            stats[key] = vals
    if temps is not None and len(temps) >= gamma:
        stats["temperatures"] = tuple(float(t) for t in temps[:gamma])
    return stats


def build_curves(res: dict, mapping: dict[str, str], description: str = "", max_samples: int = MAX_SAMPLES):
    """The curves file's content from `engine.measure.evaluate.evaluate` results (samples where every domain
    has at least one measured request-step; `max_samples` 0 leaves them out)."""
    curves, confidence, samples = {}, {}, {}
    for sim_name, eng_name in mapping.items():
        if eng_name not in res["drafters"]:
            raise ValueError(f"curves: no results for drafter {eng_name!r} (mapped to {sim_name})")
        per = res["drafters"][eng_name]
        curves[sim_name], conf = {}, {}
        for dom in ENGINE_DOMAINS:
            curve = [0.0 if v is None else v for v in per[dom]["curve"]]
            curves[sim_name][sim_domain(dom)] = clipped(curve)
            stats = _domain_stats(per[dom], per["pooled"].get("temperatures"), len(curve))
            if stats:
                conf[sim_domain(dom)] = stats
        if conf:
            confidence[sim_name] = conf
        measured = per.get("_samples", {})
        if max_samples > 0 and all(len(measured.get(dom, ((), (), ()))[1]) for dom in ENGINE_DOMAINS):
            samples[sim_name] = {
                sim_domain(dom): Samples.measured(*measured[dom], max_samples) for dom in ENGINE_DOMAINS
            }
    return Curves(curves, confidence, samples, description)
