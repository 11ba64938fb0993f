"""`specbed engine curves`: the engine's measured acceptance curves as a simulator curves file.

Role: write the JSON that `sim.curves.load_curves` reads (version 2, docs/sim-acceptance-api.md): per
simulator drafter name (eagle3, dflash, dspark) and simulator domain (chat, math, code), the measured
per-position conditional acceptance, plus confidence stats (ECE/AUC of the survival per position, raw and
after STS, and the STS temperatures) where measured, plus "samples": the measured request-steps (the
confidences the policy saw, accepted drafts, request id; at most `max_samples` rows per domain, evenly
spaced) that the simulator's acceptance.model "empirical" resamples. engine/ never imports sim, so the
schema is written here and a test checks that sim reads it back. Our "prose" domain is the simulator's "chat"
(engine.lm.data.SIM_DOMAIN). Values are clipped into [0, 1]; a statistic with an undefined value at some
position (AUC with one class only) is left out for that domain.

May import: numpy, stdlib, engine.lm.data, engine.measure.evaluate.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from engine.lm.data import DOMAINS, SIM_DOMAIN

VERSION = 2
MAX_SAMPLES = 4096
DEFAULT_MAP = {"eagle3": "eagle1", "dflash": "dflash2", "dspark": "dspark2"}
SIM_DRAFTERS = ("mtp", "eagle3", "dflash", "dspark")


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


def _clean(values, lo: float | None = 0.0, hi: float | None = 1.0):
    out = []
    for v in values:
        if v is None or not math.isfinite(v):
            return None
        out.append(min(max(float(v), lo), hi) if lo is not None else float(v))
    return out


def samples_document(conf, accepted, group, max_samples: int = MAX_SAMPLES) -> dict:
    """One domain's "samples" object (rows evenly thinned to at most `max_samples`; confidences rounded
    to 6 decimals and clipped into [0, 1])."""
    n = len(accepted)
    keep = (
        range(n)
        if n <= max_samples
        else sorted({round(i * (n - 1) / (max_samples - 1)) for i in range(max_samples)})
    )
    return {
        "conf": [[round(min(max(float(x), 0.0), 1.0), 6) for x in conf[i]] for i in keep],
        "accepted": [int(accepted[i]) for i in keep],
        "group": [int(group[i]) for i in keep],
    }


def curves_document(
    res: dict, mapping: dict[str, str], description: str = "", max_samples: int = MAX_SAMPLES
) -> dict:
    """The version-2 curves document from `engine.measure.evaluate.evaluate` results (samples where every
    domain has at least one measured request-step; `max_samples` 0 leaves them out)."""
    doc: dict = {
        "version": VERSION,
        "description": description,
        "curves": {},
        "confidence": {},
        "samples": {},
    }
    for sim_name, eng_name in mapping.items():
        if eng_name not in res["drafters"]:
            raise ValueError(f"curves: no results for drafter {eng_name!r} (mapped to {sim_name})")
        per = res["drafters"][eng_name]
        doc["curves"][sim_name] = {}
        conf = {}
        for dom in DOMAINS:
            d = per[dom]
            curve = [0.0 if v is None else v for v in d["curve"]]
            doc["curves"][sim_name][SIM_DOMAIN[dom]] = _clean(curve)
            stats = {}
            for key in ("ece_raw", "auc_raw", "ece_calibrated", "auc_calibrated"):
                vals = _clean(d[key]) if key in d else None
                if vals is not None:
                    stats[key] = vals
            temps = per["pooled"].get("temperatures")
            if temps is not None and len(temps) >= len(curve):
                stats["temperatures"] = [float(t) for t in temps[: len(curve)]]
            if stats:
                conf[SIM_DOMAIN[dom]] = stats
        if conf:
            doc["confidence"][sim_name] = conf
        samples = per.get("_samples", {})
        if max_samples > 0 and all(len(samples.get(dom, ((), (), ()))[1]) for dom in DOMAINS):
            doc["samples"][sim_name] = {
                SIM_DOMAIN[dom]: samples_document(*samples[dom], max_samples) for dom in DOMAINS
            }
    for key in ("confidence", "samples"):
        if not doc[key]:
            del doc[key]
    return doc


def write_curves(doc: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")
