"""`specbed engine eval`: τ per drafter and domain, per-position acceptance, depth ablation, calibration.

Role: decode held-out (test split) prompts of every domain with every drafter in the real engine, γ = 7,
temperature 1, every draft verified (policy fixed k = γ, standard rejection sampling), and report
- Table 1 layout: τ per drafter × domain (+ mean), τ(DSpark)/τ(DFlash) at equal depth, and the depth
  ablation (a 2-layer DSpark against the deepest DFlash-style drafter);
- Fig. 2 layout: per-position conditional acceptance per domain;
- confidence quality: per-position ECE/AUC of the survival before and after STS (the temperatures stored
  in the checkpoint were fit on the val split, so this is held-out), and a reliability diagram PNG.
`evaluate(...)` returns everything as plain data (also written as JSON) and `format_report` the text.

May import: numpy, torch, matplotlib (lazily), stdlib, specsched, engine.* (never sim).
"""

from __future__ import annotations

import io
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from engine.lm.checkpoint import Bundle
from engine.lm.data import DOMAINS, Corpus
from engine.lm.drafters import runtime_drafter
from engine.loop import Request
from engine.measure.rollout import engine_config, run_rollout
from engine.measure.stats import (
    acceptance,
    confidence_quality,
    full_conf,
    policy_samples,
    requests_for,
    temps_for,
)
from specsched.io.results import dumps_json, write_results


@dataclass(frozen=True)
class EvalConfig:
    """prompts per domain, prompt and output lengths (bytes), γ, temperature, seed of prompts/noise."""

    prompts: int = 48
    prompt_len: int = 48
    new_tokens: int = 96
    gamma: int = 7
    temperature: float = 1.0
    seed: int = 7
    split: str = "test"
    device: str = "cpu"
    trees: int = 0  # prompts per domain for the trees-vs-chains τ table (engine.tree_eval); 0 = off

    def __post_init__(self) -> None:
        if int(self.trees) < 0:
            raise ValueError(f"EvalConfig field 'trees': must be >= 0, got {self.trees}")
        for name in ("prompts", "prompt_len", "new_tokens", "gamma"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"EvalConfig field '{name}': must be >= 1, got {getattr(self, name)}")
        if not self.temperature > 0:
            raise ValueError(f"EvalConfig field 'temperature': must be > 0, got {self.temperature}")


def _list(x) -> list:
    return [None if (isinstance(v, float) and math.isnan(v)) else float(v) for v in np.asarray(x).tolist()]


def evaluate(
    bundle: Bundle,
    corpus: Corpus,
    cfg: EvalConfig,
    names: list[str] | None = None,
    progress=None,
    requests: dict[str, list[Request]] | None = None,
) -> dict:
    """Decode with every drafter, all γ verified: `requests` per domain if given (every domain; cfg's prompt
    fields are then unused), else cfg.prompts fresh prompts per domain. Returns {"config", "drafters":
    {name: {domain: {tau, curve, survival, samples, confidence...}, "pooled": {...}, "_raw": (raw conf,
    accepted) pooled, "_samples": {domain: stats.policy_samples(...)}}}}."""
    max_len = bundle.config.max_len
    if requests is not None and set(requests) != set(DOMAINS):
        raise ValueError(f"eval: requests must be given for every domain {DOMAINS}, got {sorted(requests)}")
    longest = cfg.prompt_len + cfg.new_tokens
    if requests is not None:
        longest = max(len(q.prompt) + q.max_new_tokens for v in requests.values() for q in v)
    if longest + cfg.gamma + 1 > max_len:
        raise ValueError(f"eval: prompt + new tokens + gamma + 1 exceeds the target's context {max_len}")
    batch = cfg.prompts if requests is None else max(len(v) for v in requests.values())
    ecfg = engine_config(
        cfg.device, gamma=cfg.gamma, policy="fixed", policy_params={"k": cfg.gamma}, max_running=batch
    )
    out: dict = {"config": asdict(cfg), "drafters": {}}
    names = names or bundle.names()
    for name in names:
        net = bundle.net(name)
        temps = bundle.drafters[name][1]
        per: dict = {}
        pooled_c, pooled_a = [], []
        samples: dict = {}
        for i, dom in enumerate(DOMAINS):
            target = bundle.target(cfg.device)
            drafter = runtime_drafter(net, target, slots=batch, max_len=max_len, temps=temps)
            if requests is not None:
                reqs = requests[dom]
            else:
                reqs = requests_for(
                    corpus,
                    dom,
                    cfg.prompts,
                    cfg.prompt_len,
                    cfg.new_tokens,
                    seed=cfg.seed + i,
                    split=cfg.split,
                    temperature=cfg.temperature,
                )
            ro, _ = run_rollout(target, drafter, ecfg, reqs, max_len=max_len)
            acc = acceptance(ro)
            conf, accepted = full_conf(ro)
            samples[dom] = policy_samples(ro)
            pooled_c.append(conf)
            pooled_a.append(accepted)
            q = confidence_quality(conf, accepted, temps)
            per[dom] = {
                "tau": acc["tau"],
                "curve": _list(acc["curve"]),
                "survival": _list(acc["survival"]),
                "samples": acc["samples"],
                "wall_s": ro.wall_s,
                **{k: (_list(v) if isinstance(v, np.ndarray) else v) for k, v in q.items()},
            }
            if progress:
                progress(f"{name}/{dom}: tau {acc['tau']:.3f} ({acc['samples']} steps, {ro.wall_s:.1f}s)")
        conf, accepted = np.concatenate(pooled_c), np.concatenate(pooled_a)
        pooled = confidence_quality(conf, accepted, temps)
        per["pooled"] = {k: (_list(v) if isinstance(v, np.ndarray) else v) for k, v in pooled.items()}
        per["pooled"]["temperatures"] = temps
        per["_raw"] = (conf, accepted)
        per["_samples"] = samples
        out["drafters"][name] = per
    if cfg.trees:
        from engine.tree_eval import tree_taus

        out["trees"] = tree_taus(bundle, corpus, cfg, progress)
    return out


def _kind_layers(name: str) -> tuple[str, int]:
    kind = name.rstrip("0123456789")
    return kind, int(name[len(kind) :] or 0)


def comparisons(res: dict) -> dict:
    """τ ratios: DSpark vs DFlash at equal depth, and the depth ablation (DSpark-2 vs the deepest DFlash)."""
    tau = {n: float(np.mean([d[dom]["tau"] for dom in DOMAINS])) for n, d in res["drafters"].items()}
    out = {"tau_mean": tau, "equal_depth": {}, "depth_ablation": {}}
    for n in tau:
        kind, layers = _kind_layers(n)
        if kind == "dspark" and f"dflash{layers}" in tau:
            out["equal_depth"][f"{n}/dflash{layers}"] = tau[n] / tau[f"dflash{layers}"]
    dflash = sorted((_kind_layers(n)[1], n) for n in tau if n.startswith("dflash"))
    for n in tau:
        kind, layers = _kind_layers(n)
        if kind == "dspark" and dflash and dflash[-1][0] > layers:
            deep = dflash[-1][1]
            per_dom = {
                dom: res["drafters"][n][dom]["tau"] / res["drafters"][deep][dom]["tau"] for dom in DOMAINS
            }
            out["depth_ablation"][f"{n}/{deep}"] = {"mean": tau[n] / tau[deep], **per_dom}
    return out


def format_report(res: dict) -> str:
    names = list(res["drafters"])
    gamma = res["config"]["gamma"]
    lines = [
        f"Table 1 layout: tau (gamma={gamma}, temperature {res['config']['temperature']}, all drafts "
        f"verified; {res['config']['prompts']} prompts x {res['config']['new_tokens']} bytes per domain)",
        f"{'drafter':<10}" + "".join(f"{d:>9}" for d in (*DOMAINS, "mean")),
    ]
    comp = comparisons(res)
    for n in names:
        taus = [res["drafters"][n][d]["tau"] for d in DOMAINS]
        lines.append(f"{n:<10}" + "".join(f"{t:>9.3f}" for t in taus) + f"{comp['tau_mean'][n]:>9.3f}")
    for key, r in comp["equal_depth"].items():
        lines.append(f"ratio {key} (equal depth): {r:.3f}  (goal >= 1.15)")
    for key, r in comp["depth_ablation"].items():
        doms = ", ".join(f"{d} {r[d]:.3f}" for d in DOMAINS)
        lines.append(f"depth ablation {key}: mean {r['mean']:.3f} ({doms})")
    lines += ["", "Fig. 2 layout: per-position conditional acceptance"]
    for dom in DOMAINS:
        lines.append(f"  {dom:<8}" + "".join(f"{'k=' + str(k + 1):>7}" for k in range(gamma)))
        for n in names:
            cur = res["drafters"][n][dom]["curve"]
            lines.append(
                f"  {n:<8}" + "".join(f"{(c if c is not None else float('nan')):>7.3f}" for c in cur)
            )
    for n in names:
        p = res["drafters"][n]["pooled"]
        if p.get("temperatures") is None:
            continue
        lines += [
            "",
            f"{n} confidence head, survival calibration on held-out prompts (all domains pooled)",
            f"  {'pos':<6}{'ECE raw':>9}{'ECE STS':>9}{'AUC raw':>9}{'AUC STS':>9}{'T_k':>7}",
        ]
        temps = temps_for(p["temperatures"], gamma)
        for k in range(gamma):
            vals = [p["ece_raw"][k], p["ece_calibrated"][k], p["auc_raw"][k], p["auc_calibrated"][k]]
            lines.append(
                f"  {k + 1:<6}"
                + "".join(f"{(v if v is not None else float('nan')):>9.4f}" for v in vals)
                + f"{temps[k]:>7.2f}"
            )
        lines.append(
            f"  mean  {p['ece_raw_mean']:>9.4f}{p['ece_calibrated_mean']:>9.4f}{p['auc_raw_mean']:>9.4f}"
            f"{p['auc_calibrated_mean']:>9.4f}   (goal: ECE after STS <= 0.02)"
        )
    if "trees" in res:
        from engine.tree_eval import format_trees

        lines += format_trees(res["trees"])
    return "\n".join(lines)


def reliability_png(conf: np.ndarray, accepted: np.ndarray, temps, title: str, bins: int = 10) -> bytes:
    """Reliability diagram as PNG bytes: predicted survival vs observed prefix acceptance, raw and STS."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from specsched import confidence

    gamma = conf.shape[1]
    labels = confidence.survival_labels(accepted, gamma).ravel()
    fig, ax = plt.subplots(figsize=(4.8, 4.4))
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
    variants = [("raw", np.clip(conf, 0, 1))]
    if temps is not None:
        variants.append(("STS", confidence.apply_sts(np.clip(conf, 0, 1), temps_for(temps, gamma))))
    for tag, c in variants:
        surv = np.cumprod(c, axis=1).ravel()
        idx = np.minimum((surv * bins).astype(int), bins - 1)
        pred = np.array([surv[idx == b].mean() if (idx == b).any() else np.nan for b in range(bins)])
        obs = np.array([labels[idx == b].mean() if (idx == b).any() else np.nan for b in range(bins)])
        ece = float(confidence.ece(surv, labels))
        ax.plot(pred, obs, marker="o", label=f"{tag} (ECE {ece:.3f})")
    ax.set_xlabel("predicted survival  prod c_i")
    ax.set_ylabel("observed prefix acceptance")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper left")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)  # PNG bytes: written with the folder, swapped in whole
    plt.close(fig)
    return buf.getvalue()


def write_outputs(res: dict, out_dir: Path) -> list[Path]:
    """results.json, report.txt and a reliability diagram per calibrated drafter, in out_dir."""
    pngs: dict[str, bytes] = {}
    for name, per in res["drafters"].items():
        temps = per["pooled"].get("temperatures")
        if temps is not None:
            title = f"{name}: survival reliability (held-out, pooled)"
            pngs[f"reliability_{name}.png"] = reliability_png(*per["_raw"], temps, title)
    clean = {
        "config": res["config"],
        "comparisons": comparisons(res),
        "drafters": {
            n: {k: v for k, v in d.items() if not k.startswith("_")} for n, d in res["drafters"].items()
        },
        **({"trees": res["trees"]} if "trees" in res else {}),
    }
    report = format_report(res) + "\n"
    files = {"results.json": dumps_json(clean, indent=1, sort_keys=False), "report.txt": report}
    files.update(pngs)  # one job's folder, swapped in whole: no old figure of another drafter set stays
    write_results(out_dir, files, config=res["config"], command="engine eval", adopt=())
    return [out_dir / "results.json", out_dir / "report.txt", out_dir / "config.json",
            *(out_dir / n for n in pngs)]  # fmt: skip
