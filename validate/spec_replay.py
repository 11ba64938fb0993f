"""Replay measured speculative cases through the simulator's speculative pricing.

Role: `predict(case, knobs)` prices one `validate.spec_cases.SpecCase` at its steady state with its published
acceptance: B requests, each holding `CONTEXT` KV tokens, each emitting E tokens a step (E = the case's
acceptance length, bonus included):

    no speculation   T0 = target step at B tokens (the catalogue's vLLM cost table on the GPU's shipped
                     knobs) + the engine version's exposed host seconds (`nospec_host_s`)
    speculative      T1 = draft step (`specsched.price.draft_shape.own_draft_cost` with `drafter.engine` = the
                     case's engine and version: first pass over the verified positions, K − 1 later ones,
                     host launches, rejection sampling) + target step at B·(1 + K) tokens (B·(1 + nodes)
                     for a tree) + the drafter's and the verify kernel's KV reads + nospec_host_s
                     n-gram: no draft pass; the target step is f·(step at B·(1 + K)) + (1 − f)·(step at B),
                     f = the knob `ngram_draft_frac` (the share of steps with a prompt match)
    speedup = E·T0 / T1; tpot_ms = 1e3·T1 / E; itl_ms as tpot; throughput_tok_s = B·E / T1.

The headline of a case is its **speed-up** over no speculation wherever the measurement gives one (the
`speedup` metric, or any metric with its measured no-speculation `baseline`: TPOT and ITL as baseline /
measured, throughput as measured / baseline), compared with E·T0 / T1: that is what a user asks specbed
for, and it does not charge the speculative arm with the error of the no-speculation step (priced and
validated on its own, `validate.predict`) or with a benchmark's own limits that hit both arms alike (a
20-prompt benchmark at batch 64). A case without a baseline is compared on its metric.

`replay(cases, knobs)` returns one row a case (headline measured and predicted, signed error %, the
metric's own values and error, or why it was not modelled); `medians(rows)` the median |error| per split
and over all. Cases given by request rate, Medusa and e2e_s are reported as not modelled.

May import: numpy, the standard library, `specsched.price.vllm`, `specsched`, `validate.spec_cases`.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from functools import lru_cache

import numpy as np

from specsched.draft_lm import find_draft_lm, get_draft_lm
from specsched.io.errors import InputError
from specsched.price import GPUS, find_model, get_model
from specsched.price.draft_shape import drafter_shape, own_draft_cost
from specsched.price.knobs import shipped_knobs
from specsched.price.moe_verify import verify_expert_seconds
from specsched.price.spec_engine import get_engine
from specsched.price.vllm import VllmSpec, cost_table, sampling_seconds
from specsched.spec_knobs import SpecKnobs, tp_class
from specsched.spec_versions import engine_name
from validate.spec_cases import SpecCase

#: KV tokens a request holds at the steady state (prompt + half the output of a chat turn)
CONTEXT = 512
#: tokens the replayed cost table covers (`specsched.price.vllm.cost_table`: max(max_num_batched_tokens,
#: 8192))
MAX_TOKENS = 8192
#: relative excess of a measured speed-up over its acceptance length still read as agreement (`inconsistent`)
READ_TOLERANCE = 0.02
PRESET = {"eagle": "eagle1", "eagle3": "eagle3", "mtp": "mtp"}


@lru_cache(maxsize=64)
def _table(model: str, gpu: str, tp: int, precision: str | None):
    spec = VllmSpec(model=model, gpu=gpu, tp=tp, precision=precision, max_num_seqs=256)
    return cost_table(spec, shipped_knobs(gpu)), spec


def _shape(case: SpecCase, target):
    if case.drafter == "draft_model":
        return get_draft_lm(case.drafter_model)
    return drafter_shape(PRESET[case.drafter], target)


def step_parts(case: SpecCase, knobs: SpecKnobs) -> dict[str, dict[str, float]]:
    """The two steps of `case` at its batch by named part, seconds: {"ar": {...}, "spec": {...}}; each
    step's seconds are the sum of its parts except `verify_moe` (a named share of `verify_forward`: the
    routed experts the verify's tokens touch beyond the decode's, `specsched.price.moe_verify`).

    ar:   forward (the target's step over B tokens), host (the version's exposed host a step)
    spec: draft (the drafter's GPU passes, eager floors included), draft_host (the version's exposed host
          work a step and a drafting request), reject (rejection sampling over the drafted positions),
          verify_forward (the target's step over B·(1 + K), or B·(1 + nodes) for a tree), verify_moe,
          verify_kv (the verify kernel's extra KV read), draft_kv (the drafter's KV read), host

    A tree's first draft pass (SGLang's draft extend after verify, `EAGLEWorker.
    forward_draft_extend_after_decode` → `prepare_extend_after_decode`) runs over each request's accepted
    tokens, at most steps + 1 (SGLang 0.5's `EAGLEDraftExtendCudaGraphRunner` captures exactly
    `speculative_num_steps + 1` a request), not over the tree's nodes: it is priced over B·(1 + K); the
    rejection over the B·nodes drafted positions."""
    table, spec = _table(get_model(case.model).name, case.gpu, case.tp, case.precision)
    target, gpu, bpp = spec.resolve()
    eng = get_engine(engine_name(case.engine, case.engine_version))
    if case.attention_backend is not None:  # SGLang's FlashInfer backend verifies through its custom-mask
        # prefill kernel (eagle_utils builds custom_mask for TARGET_VERIFY); FA3 through its varlen kernel
        kernel = "flashinfer-mask" if case.attention_backend == "flashinfer" else "fa3"
        eng = replace(eng, verify_kernel=kernel)
    b, k = case.batch, case.k
    verify_tokens = b * (1 + (case.tree_nodes or k))
    ctx = b * CONTEXT
    forward, verify = float(table.step_seconds(b, b, ctx)), float(table.step_seconds(verify_tokens, b, ctx))
    if case.temperature == 0:  # greedy: vLLM's Sampler returns the argmax (v1/sample/sampler.py `sample`:
        # all_greedy), so the table's top-p / top-k sampler over the vocabulary runs in neither arm
        forward -= float(sampling_seconds(spec, shipped_knobs(case.gpu), np.array([b]))[0])
        verify -= float(sampling_seconds(spec, shipped_knobs(case.gpu), np.array([verify_tokens]))[0])
    ar = {"forward": forward, "host": eng.nospec_host_s}
    sp = {"verify_forward": verify, "host": eng.nospec_host_s,
          "verify_moe": verify_expert_seconds(target, gpu, shipped_knobs(case.gpu), verify_tokens, b,
                                              tp=case.tp, bpp=bpp)}  # fmt: skip
    if case.drafter == "ngram":  # drafted on the host from the prompt: no GPU pass, the rejection launches;
        # a step without a prompt match drafts nothing and verifies the request's one token (knob
        # ngram_draft_frac: the share of steps that draft), so the verify is the mix of the two steps
        f = knobs.ngram_draft_frac
        sp["verify_forward"] = f * verify + (1.0 - f) * forward
        sp["verify_moe"] *= f
        return {"ar": ar, "spec": {**sp, "draft_host": eng.prep_ops * knobs.op_s}}
    shape = _shape(case, target)
    top = max(b * (case.tree_nodes or k), b)
    own, kv = own_draft_cost(shape, target, gpu, shipped_knobs(case.gpu), k, top, tp=case.tp, bpp=bpp,
                             engine=eng, emitted=case.emitted, spec_knobs=knobs)  # fmt: skip
    total = float(own.price(np.array([b * k]), np.array([b]), np.array([k]), table)[0])
    host = own.host_s + own.request_s * b
    reject = own.position_s * b * (case.tree_nodes or k)
    sp.update(draft=total - host - own.position_s * b * k, draft_host=host, reject=reject,
              verify_kv=own.verify_kv_s * ctx, draft_kv=kv * ctx)  # fmt: skip
    return {"ar": ar, "spec": sp}


def step_seconds(case: SpecCase, knobs: SpecKnobs) -> tuple[float, float]:
    """(no-speculation step, speculative step) seconds of `case` at its batch (`step_parts` summed)."""
    parts = step_parts(case, knobs)
    return (sum(parts["ar"].values()),
            sum(v for name, v in parts["spec"].items() if name != "verify_moe"))  # fmt: skip


def predict(case: SpecCase, knobs: SpecKnobs) -> float:
    """The case's metric as the simulator's pricing predicts it (module docstring)."""
    why = unmodelled(case)
    if why:
        raise ValueError(why)
    ar, spec = step_seconds(case, knobs)
    e = case.emitted
    return {"speedup": e * ar / spec, "tpot_ms": 1e3 * spec / e, "itl_ms": 1e3 * spec / e,
            "throughput_tok_s": case.batch * e / spec}[case.metric]  # fmt: skip


def measured_speedup(case: SpecCase) -> float | None:
    """The case's measured speed-up over no speculation (None where it gives none: module docstring)."""
    if case.metric == "speedup":
        return case.measured
    if case.baseline is None or case.metric == "e2e_s":
        return None
    if case.metric in ("tpot_ms", "itl_ms"):
        return case.baseline / case.measured
    return case.measured / case.baseline


def headline(case: SpecCase, knobs: SpecKnobs) -> tuple[float, float]:
    """(measured, predicted) of the case's headline: its speed-up where it gives one, else its metric."""
    sp = measured_speedup(case)
    if sp is None:
        return case.measured, predict(case, knobs)
    ar, spec = step_seconds(case, knobs)
    return sp, case.emitted * ar / spec


def inconsistent(case: SpecCase) -> str:
    """Why the case's own figures contradict each other ("" when they do not): a measured speed-up above the
    acceptance length E means a speculative step cheaper than a plain one (speed-up = E·T0 / T1 with
    T1 ≥ T0: the speculative step holds a target pass over at least the plain step's tokens), so the
    speed-up and the acceptance come from different runs or configurations. Beyond `READ_TOLERANCE` (figures
    read off a plot carry ±0.01). Such a case stays in every median (dropping it would choose cases by their
    error); it is marked so a reader weighs it."""
    sp = measured_speedup(case)
    if sp is None or case.acceptance_length is None or sp <= case.emitted * (1.0 + READ_TOLERANCE):
        return ""
    return f"measured speed-up {sp:.3f} exceeds the acceptance length {case.emitted:.3f}"


def unmodelled(case: SpecCase) -> str:
    """Why `case` cannot be replayed ("" when it can)."""
    model = find_model(case.model)
    if model is None:
        return f"model {case.model!r} is not in the catalogue"
    if model.heads is None:  # MLA (DeepSeek-V3): the vLLM step prices GQA attention from config.json heads
        return f"model {model.name!r} has no GQA attention shape (MLA is not priced by the vLLM step)"
    if case.gpu not in GPUS:
        return f"gpu {case.gpu!r} is not in the catalogue"
    try:
        shipped_knobs(case.gpu)
    except InputError as err:  # a catalogue GPU the knobs cannot be carried to (no kernel figures)
        return f"gpu {case.gpu!r} has no knobs: {err.message}"
    if case.batch is None:
        return "given by request rate (a steady batch is replayed)"
    if case.drafter == "medusa":
        return "Medusa heads are not priced"
    if case.metric == "e2e_s":
        return "e2e_s needs the request lengths"
    if case.acceptance_length is None and case.acceptance_rates is None:
        return "no published acceptance"
    if case.drafter == "draft_model" and find_draft_lm(case.drafter_model) is None:
        return f"draft model {case.drafter_model!r} is not known (catalogue or specsched.draft_lm)"
    if case.batch * (1 + (case.tree_nodes or case.k)) > MAX_TOKENS:
        return f"a verify pass over more than the replayed table's {MAX_TOKENS} tokens"
    return ""


def replay(cases: list[SpecCase], knobs: SpecKnobs) -> list[dict]:
    """One row a case: {"case", "split", "source", "measured", "predicted", "error_pct"} (signed %,
    predicted vs measured) or {"case", ..., "skipped": why}."""
    rows = []
    for c in cases:
        row = {
            "case": c.case_id,
            "split": c.split,
            "source": c.source,
            "engine": engine_name(c.engine, c.engine_version),
            "tp": c.tp,
            "metric": c.metric,
            "measured": c.measured,
        }
        why = unmodelled(c)
        if why:
            rows.append({**row, "skipped": why})
            continue
        try:
            p = predict(c, knobs)
            hm, hp = headline(c, knobs)
        except InputError as err:  # a deployment the catalogue cannot price (e.g. heads not divisible by tp)
            raise InputError(err.message, file=c.file or None, line=c.line or None, field=err.field) from None
        rows.append({**row, "predicted": p, "metric_error_pct": 100.0 * (p - c.measured) / c.measured,
                     "headline": "speedup" if measured_speedup(c) is not None else c.metric,
                     "headline_measured": hm, "headline_predicted": hp,
                     "error_pct": 100.0 * (hp - hm) / hm})  # fmt: skip
        if inconsistent(c):
            rows[-1]["inconsistent"] = inconsistent(c)
    return rows


def medians(rows: list[dict]) -> dict[str, float]:
    """Median |error| % by split and over all modelled rows ("all")."""
    out = {}
    for split in ("train", "check", "all"):
        errs = [abs(r["error_pct"]) for r in rows if "error_pct" in r and split in (r["split"], "all")]
        if errs:
            out[split] = statistics.median(errs)
    return out


def engine_bands(rows: list[dict], loso_rows: list[dict] = ()) -> dict[str, dict]:
    """{engine version: band} of the modelled rows: per split present, "<split>_median_pct",
    "<split>_worst_pct", "<split>_cases" (|error| % of the headline), "loso_median_pct" /
    "loso_worst_pct" where `loso_rows` hold that engine's train cases, and "sign_right" / "sign_cases"
    (speed-ups on the measured side of 1); "tp": {"1": band, ">1": band} the same over the cases at one GPU
    and at tensor parallelism (a deployment quotes its own class: the errors differ by class, and a class
    without train cases is extrapolated). What every speculative prediction quotes for its engine
    (`specsched.spec_knobs.engine_band`): figures from the dataset, never typed in."""
    out: dict[str, dict] = {}
    versions = sorted({r.get("engine", "") for r in rows if "error_pct" in r})
    families = sorted({v.split("-")[0] + "-*" for v in versions if "-" in v})
    for engine in versions + families:  # "sglang-*": every SGLang version together (a version without cases
        #                                  quotes its family's band, `specsched.spec_knobs.engine_band`)
        mine = [r for r in rows if "error_pct" in r and _of(r.get("engine", ""), engine)]
        held = [r for r in loso_rows if "error_pct" in r and _of(r.get("engine", ""), engine)]
        band = _band(mine, held)
        by_tp = {c: _band([r for r in mine if _tp_class(r) == c], [r for r in held if _tp_class(r) == c])
                 for c in sorted({_tp_class(r) for r in mine})}  # fmt: skip
        if by_tp:
            band["tp"] = by_tp
        out[engine] = band
    return out


def _tp_class(row: dict) -> str:
    return tp_class(int(row.get("tp", 1)))


def _band(mine: list[dict], held: list[dict]) -> dict:
    """The figures of one band over modelled rows `mine` and their leave-one-source-out rows `held`."""
    band: dict = {}
    for split in ("train", "check"):
        errs = [abs(r["error_pct"]) for r in mine if r["split"] == split]
        if errs:
            band.update({f"{split}_median_pct": statistics.median(errs), f"{split}_worst_pct": max(errs),
                         f"{split}_cases": len(errs)})  # fmt: skip
    errs = [abs(r["error_pct"]) for r in held]
    if errs:
        band.update(loso_median_pct=statistics.median(errs), loso_worst_pct=max(errs))
    band["sign_right"], band["sign_cases"] = sign_right(mine)
    return band


def _of(version: str, key: str) -> bool:
    """Whether engine `version` ("sglang-0.4") is `key`: the version itself or its family ("sglang-*")."""
    return version == key or (key.endswith("-*") and version.split("-")[0] == key[:-2])


def sign_right(rows: list[dict]) -> tuple[int, int]:
    """(cases whose predicted speed-up is on the measured side of 1, cases modelled with a speed-up)."""
    sp = [r for r in rows if "error_pct" in r and r["headline"] == "speedup"]
    return sum((r["headline_predicted"] > 1) == (r["headline_measured"] > 1) for r in sp), len(sp)
