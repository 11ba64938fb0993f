"""Each speculative option that applies, across load, through the `[cost]` deployment path.

Role: build one simulator config per (option, load) — the user's deployment (`advise.inputs.Deployment`:
`cost.model` + `cost.gpu`, priced by `sim.deploy.cost.deployment` exactly as `specbed run` prices it), the
traffic's request lengths, a closed loop of C users (C = the load: vLLM's concurrent requests, the batch
size the K schedule is indexed by) — run it (`sim.run.simulate`), and reduce the runs to what the report
answers: the throughput gain of each option over no speculation at each load, the validated error band of
that gain (`sim.deploy.draft.accuracy`: summary.json's `accuracy_*` keys), the load where speculation stops
paying, the batch-size → K schedule of the same deployment (`analysis.draft_schedule.deployment_schedule`)
and vLLM's `--speculative-config` (`analysis.search.launch.speculative_config`).

Options (`options`): none (autoregressive), EAGLE-3 at fixed K, MTP at fixed K (models with MTP heads),
n-gram at fixed K (only with measured n-gram acceptance curves: its acceptance is the traffic's own), a
draft model at fixed K where the target's family has a small sibling (`specsched.draft_lm.sibling`:
Llama-3.2-1B for Llama 3.x, Qwen3-0.6B for Qwen3; priced from its own shape by `sim.deploy.draft`; its
acceptance is EAGLE-3's built-in curve, a stand-in: `DRAFT_LM_ACCEPTANCE`), and DSpark-style adaptive
verification (EAGLE-3 drafter, γ = 7, `policy.draft = "adaptive"`).

May import: numpy, the standard library, `sim`, `specsched`, `analysis`, `advise.inputs`.
"""

from __future__ import annotations

from dataclasses import dataclass

from advise.inputs import Deployment, Traffic

#: closed-loop users tried (capped at max_num_seqs)
LOADS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
#: where the draft-model option's acceptance comes from (said in the report's notes)
DRAFT_LM_ACCEPTANCE = (
    "its acceptance is EAGLE-3's built-in curve (specsched.contracts.builtin_curves, DSpark paper Fig. 2, "
    "Qwen3-4B): a stand-in, no draft-model acceptance is measured here; its cost is its own shape's"
)
#: γ the adaptive option drafts up to (its plan picks the depth per batch size)
ADAPTIVE_GAMMA = 7


@dataclass(frozen=True)
class Option:
    """One way to serve: `name` (report label), `key` (short id), `sets` (its drafter/policy keys)."""

    name: str
    key: str
    sets: tuple[str, ...]


def engine_name(version: str | None) -> str:
    """drafter.engine for a vLLM version ("0.15.1" -> "vllm-0.15"; unknown or None -> "vllm")."""
    from sim.deploy.keys import SPEC_ENGINES

    if not version:
        return "vllm"
    short = "vllm-" + ".".join(version.lstrip("v").split(".")[:2])
    return short if short in SPEC_ENGINES else "vllm"


def options(dep: Deployment, engine: str, curves: str | None, curve_names: tuple[str, ...]) -> list[Option]:
    """The options that apply to `dep` (module docstring); curves: a curves file naming `curve_names`."""
    k, eng = dep.k, f"drafter.engine={engine}"
    fixed = ("policy.name=fixed", f"policy.k={k}", f"drafter.gamma={k}")
    out = [
        Option("no speculation", "none", ("drafter.name=none", "policy.name=ar")),
        Option(f"EAGLE-3, K={k}", "eagle3", ("drafter.name=eagle3", "drafter.model=eagle3", eng, *fixed)),
    ]
    if dep.has_mtp:
        out.append(Option(f"MTP, K={k}", "mtp", ("drafter.name=mtp", "drafter.model=mtp", eng, *fixed)))
    draft = _sibling(dep.model)
    if draft is not None:  # acceptance: EAGLE-3's built-in curve (DRAFT_LM_ACCEPTANCE)
        lm = ("drafter.name=eagle3", f"drafter.model={draft}", eng, *fixed)
        out.append(Option(f"draft model {draft}, K={k}", "draft_model", lm))
    if curves is not None and "ngram" in curve_names:
        out.append(
            Option(
                f"n-gram, K={k}",
                "ngram",
                ("drafter.name=ngram", f"drafter.curves={curves}", "acceptance.model=empirical", *fixed),
            )
        )
    out.append(
        Option(
            f"DSpark adaptive (EAGLE-3, γ≤{ADAPTIVE_GAMMA})",
            "adaptive",
            (
                "drafter.name=eagle3",
                "drafter.model=eagle3",
                eng,
                f"drafter.gamma={ADAPTIVE_GAMMA}",
                "policy.name=dspark",
                "policy.draft=adaptive",
            ),
        )
    )
    return out


def _sibling(model: str) -> str | None:
    from specsched.draft_lm import sibling
    from specsched.price import find_model

    target = find_model(model)
    return None if target is None else sibling(target)


def loads(dep: Deployment, wanted: tuple[int, ...] | None) -> list[int]:
    """The loads swept: `wanted`, else LOADS up to max_num_seqs (and max_num_seqs itself)."""
    if wanted:
        return sorted(set(wanted))
    got = [c for c in LOADS if c <= dep.max_num_seqs]
    return got if dep.max_num_seqs in got or dep.max_num_seqs > LOADS[-1] else [*got, dep.max_num_seqs]


def config(dep: Deployment, tr: Traffic, opt: Option, users: int, requests_per_user: float, extra=()):
    """The SimConfig of one (option, load): a closed loop of `users`, users × requests_per_user requests."""
    from sim.config_io import load_config

    n = max(int(users * requests_per_user), 2 * users, 24)
    sets = [
        *dep.sets(),
        *tr.sets(),
        "workload.kind=closed",
        f"workload.concurrency={users}",
        f"workload.num_requests={n}",
        *opt.sets,
        *extra,
    ]
    return load_config(None, sets)


def run_all(dep, tr, opts, users_list, *, requests_per_user=4.0, extra=(), progress=None) -> list[dict]:
    """One row per (option, load): option key, users, throughput, per-user speed, e2e, TTFT, τ, accuracy."""
    from sim.deploy.draft import accuracy
    from sim.run import simulate

    rows = []
    for opt in opts:
        for users in users_list:
            cfg = config(dep, tr, opt, users, requests_per_user, extra)
            s = simulate(cfg).summary
            rows.append(
                {
                    "option": opt.key,
                    "label": opt.name,
                    "users": users,
                    "throughput_tok_s": s["throughput_tok_s"],
                    "per_user_tok_s": s["per_user_tok_s_mean"],
                    "e2e_s_mean": s["e2e_s_mean"],
                    "ttft_s_mean": s["ttft_s_mean"],
                    "tpot_s_mean": s["tpot_s_mean"],
                    "mean_batch": s["mean_batch_size"],
                    "tau": s.get("tau_mean"),
                    "accuracy": accuracy(cfg),
                }
            )
            if progress is not None:
                progress.advance(1, f"{opt.key} C={users}")
    return rows


def gains(rows: list[dict]) -> list[dict]:
    """Each speculative row's gain over no speculation at the same load: throughput ratio − 1 (percent;
    closed loop, so also the per-user speed-up) and its error band (the speculative arm's leave-one-source-out
    median / worst |error| of the speed-up, percent; None where the option is not covered) as the gain's
    range, gain_lo_pct … gain_hi_pct (the speed-up ± its median |error|)."""
    base = {r["users"]: r for r in rows if r["option"] == "none"}
    out = []
    for r in rows:
        if r["option"] == "none" or r["users"] not in base:
            continue
        b, acc = base[r["users"]], r["accuracy"]
        speedup = r["throughput_tok_s"] / b["throughput_tok_s"]
        band = acc.get("accuracy_spec_speedup_loso_median_pct")
        out.append(
            {
                "option": r["option"],
                "label": r["label"],
                "users": r["users"],
                "gain_pct": (speedup - 1.0) * 100.0,
                "gain_lo_pct": None if band is None else (speedup * (1 - band / 100) - 1.0) * 100.0,
                "gain_hi_pct": None if band is None else (speedup * (1 + band / 100) - 1.0) * 100.0,
                "latency_ratio": r["e2e_s_mean"] / b["e2e_s_mean"],
                "band_median_pct": acc.get("accuracy_spec_speedup_loso_median_pct"),
                "band_worst_pct": acc.get("accuracy_spec_speedup_loso_worst_pct"),
                "engine_validated": acc.get("accuracy_spec_engine_validated"),
            }
        )
    return out


def stops_paying(g: list[dict], option: str) -> dict:
    """{"users": the lowest load from which the option's gain stays ≤ 0 (None: it pays everywhere swept),
    "within_band": the lowest load from which the band's low end stays ≤ 0: no gain can be claimed}."""
    pts = sorted((r for r in g if r["option"] == option), key=lambda r: r["users"])

    def first_from(bad) -> int | None:
        for i, r in enumerate(pts):
            if all(bad(q) for q in pts[i:]):
                return r["users"]
        return None

    return {
        "users": first_from(lambda r: r["gain_pct"] <= 0.0),
        "within_band": first_from(lambda r: _low(r) <= 0.0),
    }


def _low(r: dict) -> float:
    """The low end of a gain's band (the gain itself without a band)."""
    return r["gain_pct"] if r.get("gain_lo_pct") is None else r["gain_lo_pct"]


def best_option(g: list[dict], users: int) -> str | None:
    """The speculative option with the highest gain at the load nearest `users` (None if none gains)."""
    if not g:
        return None
    near = min({r["users"] for r in g}, key=lambda u: abs(u - users))
    top = max((r for r in g if r["users"] == near), key=lambda r: r["gain_pct"])
    return top["option"] if top["gain_pct"] > 0 else None


def k_schedule(dep, tr, opt: Option, users_list, extra=()) -> list[dict]:
    """The batch-size → K schedule of the adaptive option on this deployment (`deployment_schedule`: the
    same prepare and step cost `specbed run` uses)."""
    from analysis.draft_schedule import deployment_schedule

    cfg = config(dep, tr, opt, max(users_list), 1.0, extra)
    return deployment_schedule(cfg, list(users_list))[2]


def speculative_config(dep, tr, opt: Option, schedule, draft_model: str | None) -> dict | None:
    """vLLM's --speculative-config for the option (with the adaptive schedule's deepest K)."""
    from analysis.spec_config import speculative_config as spec_json
    from sim.config_io import config_to_dict

    doc = config_to_dict(config(dep, tr, opt, 1, 1.0))
    name = doc["drafter"]["name"]
    models = {name: draft_model} if draft_model else {}
    return spec_json(doc, models, schedule if opt.key == "adaptive" else None)
