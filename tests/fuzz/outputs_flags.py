"""Generated classes of the CLI fuzz catalogue, part two: outputs onto inputs or a result folder's own files,
runs into sweep folders, names over 255 bytes, flags checked before any work, and silent nonsense (issue 27).
"""

from __future__ import annotations

import json

from tests.fuzz.base import GOOD_TRACE, RUN, SWEEP, Case
from tests.fuzz.generated import BASE_FILES, FIT, FIT_ARGS, LONG, SLOTS, VLLM, _case

RUN_FILES = ("summary.json", "requests.csv", "series.csv", "confidence.json", "config.toml", "timeline.json")
SWEEP_FILES = ("sweep.json", "results.jsonl", "results.csv", "cells/x.json", "errors/x.txt")
#: commands that write one file: (argv before --out/--json, the output flag)
WRITERS = {
    "report": (("report", "{W}/done"), "--out"),
    "pareto": (("pareto", "{W}/done"), "--out"),
    "export": (("export", "{W}/run"), "--out"),
    "vllm export": (("vllm", "export", "{W}/run"), "--out"),
    "cost check": (("cost", "check", "{W}/measured.csv", "--fit", "{W}/good-fit.json"), "--json"),
    "cost fit": (("cost", "fit", "{W}/measured.csv", *FIT_ARGS), "--out"),
    "from-vllm": (("curves", "from-vllm", "{W}/bench.json", *VLLM), "--out"),
    "plan": (("plan", "--draft-schedule", "--cost", "h200-v4flash"), "--json"),
    "trace convert": (("trace", "convert", "{W}/trace.csv"), "--out"),
    "trace synth": (("trace", "synth", "{W}/trace.csv", "--n", "4"), "--out"),
}
_SUFFIX = {"trace convert": ".csv", "trace synth": ".csv"}


def output_cases() -> list[Case]:
    out = []
    for name, (argv, flag) in WRITERS.items():
        targets = [f"run/{f}" for f in RUN_FILES] + [f"done/{f}" for f in SWEEP_FILES]
        for target in targets:
            if name.startswith("trace") and not target.endswith(".csv"):
                continue  # the trace writer refuses the suffix first: covered elsewhere
            full = (*argv, flag, "{W}/" + target)
            out.append(
                Case("onto", f"{name} onto {target}", full, dict(BASE_FILES), (target.split("/")[-1],))
            )
    inputs = {
        "cost fit onto its data": ("cost", "fit", "{W}/measured.csv", *FIT_ARGS, "--out", "{W}/measured.csv"),
        "from-vllm onto its scrape": (
            "curves",
            "from-vllm",
            "{W}/bench.json",
            *VLLM,
            "--out",
            "{W}/bench.json",
        ),
        "convert onto its trace": ("trace", "convert", "{W}/trace.csv", "--out", "{W}/trace.csv"),
        "synth onto its trace": ("trace", "synth", "{W}/trace.csv", "--n", "3", "--out", "{W}/trace.csv"),
        "plan json onto its cost": (
            "plan",
            "--draft-schedule",
            "--cost",
            "{W}/cost.csv",
            "--layers",
            "8",
            "--json",
            "{W}/cost.csv",
        ),
        "run into a finished sweep": (*RUN, "--out", "{W}/done"),
        "run into a sweep's cells": (*RUN, "--out", "{W}/done/cells"),
        "plan json a folder/": ("plan", "--draft-schedule", "--cost", "h200-v4flash", "--json", "{W}/nd/"),
        "plan json an existing folder": (
            "plan",
            "--draft-schedule",
            "--cost",
            "h200-v4flash",
            "--json",
            "{W}/afolder",
        ),
    }
    names = {"cost fit onto its data": "measured.csv", "from-vllm onto its scrape": "bench.json"}
    files = {**BASE_FILES, "afolder/": b""}
    for name, argv in inputs.items():
        word = names.get(name, argv[-1].rstrip("/").split("/")[-1])
        out.append(Case("onto", name, argv, files, (word,)))
    return out + long_cases()


def long_cases() -> list[Case]:
    out = []
    for name, (argv, flag) in WRITERS.items():
        target = "{W}/" + LONG + _SUFFIX.get(name, ".json")
        out.append(Case("long-name", f"{name} {flag}", (*argv, flag, target), dict(BASE_FILES), (LONG[:16],)))
    for name, argv in {"run --out": (*RUN, "--out"), "sweep --out": ("sweep", "{W}/s.toml", "--out")}.items():
        for where in (LONG, f"ok/{LONG}", f"{LONG}/deeper"):
            out.append(
                Case(
                    "long-name",
                    f"{name} {where.replace(LONG, 'LONG')}",
                    (*argv, "{W}/" + where),
                    dict(BASE_FILES),
                    (LONG[:16],),
                )
            )
    for slot, (argv, ext) in SLOTS.items():
        full = tuple(a.replace("{F}", "{W}/" + LONG + ext) for a in argv)
        out.append(Case("long-name", f"input {slot}", full, dict(BASE_FILES), (LONG[:16],)))
    return out


# -- flags, checked before any work --------------------------------------------------------------------------

_FID = ("fidelity", "--out", "{W}/fo", "--quiet")
SLOW_FLAGS = [
    *[
        (f"fidelity --policies {v!r}", (*_FID, "--policies", v), "--policies")
        for v in ("nope", "ar,nope", ",", "fixed,DSPARK")
    ],
    *[
        (f"fidelity --draft-seconds {v}", (*_FID, "--draft-seconds", v), "--draft-seconds")
        for v in ("-1", "nan", "inf")
    ],
    *[(f"fidelity --warmup {v}", (*_FID, "--warmup", v), "--warmup") for v in ("1", "2", "-0.1")],
    *[(f"fidelity --drain {v}", (*_FID, "--drain", v), "--drain") for v in ("1", "-1")],
    ("fidelity warmup+drain", (*_FID, "--warmup", "0.6", "--drain", "0.5"), "--drain"),
    *[(f"fidelity --fixed-k {v}", (*_FID, "--fixed-k", v), "--fixed-k") for v in ("0", "-1", "99")],
    ("fidelity --seed -1", (*_FID, "--seed", "-1"), "--seed"),
    (
        "profile --steps-out under a file",
        ("engine", "profile", "--out", "{W}/p.csv", "--steps-out", "{W}/afile/s.csv"),
        "afile",
    ),
    (
        "profile --steps-out a folder",
        ("engine", "profile", "--out", "{W}/p.csv", "--steps-out", "{W}/afolder"),
        "afolder",
    ),
    (
        "profile --steps-out = --out",
        ("engine", "profile", "--out", "{W}/p.csv", "--steps-out", "{W}/p.csv"),
        "--steps-out",
    ),
]
_PLAN = ("plan", "--draft-schedule", "--cost", "h200-v4flash")
_SYNTH = ("trace", "synth", "{W}/trace.csv", "--n", "4", "--out", "{W}/s.csv")
FAST_FLAGS = [
    *[
        (f"plan --batch-sizes {v}", (*_PLAN, "--batch-sizes", v), "--batch-sizes")
        for v in ("16385", "2000000", "1,99999")
    ],
    *[(f"plan --layers {v}", (*_PLAN, "--layers", v), "--layers") for v in ("1025", "100000")],
    *[(f"plan --gamma {v}", (*_PLAN, "--gamma", v), "--gamma") for v in ("65", "500")],
    *[(f"synth --cv {v}", (*_SYNTH, "--cv", v), "--cv") for v in ("101", "1e6")],
    *[(f"synth --rate {v}", (*_SYNTH, "--rate", v), "--rate") for v in ("2e6", "1e9")],
    *[
        (
            f"policy.k {k} > gamma {g}",
            (*RUN, "--set", "policy.name=fixed", "--set", f"drafter.gamma={g}", "--set", f"policy.k={k}"),
            "policy.k",
        )
        for g, k in ((1, 2), (3, 9), (7, 8))
    ],
]


def flag_cases() -> list[Case]:
    files = {**BASE_FILES, "afolder/": b""}
    out = [Case("flags-early", n, a, files, (w,), True) for n, a, w in SLOW_FLAGS]
    return out + [Case("flags-early", n, a, files, (w,)) for n, a, w in FAST_FLAGS]


# -- silent nonsense -----------------------------------------------------------------------------------------

_COST = (*RUN, "--set", "cost.layers=32", "--set")
_KNOB_BAD = {
    "c0": (-1e-6, 1.0),
    "eta_bw": (0.0, 1.5),
    "eta_f": (-0.5, 3.0),
    "link_bw": (1e3, 1e20),
    "hop_latency": (-1.0, 5.0),
    "request_s": (-1.0, 10.0),
    "bytes_per_param": (0.0, 1e3),
    "ep": (0.5, 2.5),
    "link_latency": (-1.0, 1e3),
}


def nonsense_cases() -> list[Case]:
    out = []
    for key, header in (
        ("cost.table", "tokens"),
        ("cost.policy_table", "tokens"),
        ("drafter.cost", "requests"),
    ):
        for v in ("1e-300", "1e-10", "1e5", "1e300"):
            table = f"{header},seconds\n1,{v}\n16,{v}\n".encode()
            out.append(_case("nonsense", f"{key} step time {v}", (*_COST, f"{key}={{F}}"), "t.csv", table))
        for dup in (f"{header},seconds,seconds", f"{header},{header},seconds"):
            table = f"{dup}\n1,0.01,0.02\n16,0.02,0.03\n".encode()
            out.append(_case("nonsense", f"{key} header {dup}", (*_COST, f"{key}={{F}}"), "t.csv", table))
    both = b"tokens,requests,seconds\n1,1,0.001\n8,8,0.002\n"
    out.append(
        _case("nonsense", "drafter.cost tokens and requests", (*_COST, "drafter.cost={F}"), "t.csv", both)
    )
    dup = b"phase,tp,requests,tokens,tokens,seconds\ndecode,1,1,1,1,0.01\n"
    out.append(_case("nonsense", "measured duplicate column", SLOTS["cost fit"][0], "m.csv", dup))
    check = ("cost", "check", "{W}/measured.csv", "--fit", "{F}")
    for knob, values in _KNOB_BAD.items():
        for v in values:
            doc = json.loads(json.dumps(FIT))
            doc["knobs"][knob] = v
            out.append(
                _case("nonsense", f"fit {knob}={v}", check, "f.json", json.dumps(doc).encode(), (knob,))
            )
    for v in (0, 2, 99, "1"):
        doc = dict(FIT, version=v)
        out.append(
            _case("nonsense", f"fit version {v!r}", check, "f.json", json.dumps(doc).encode(), ("version",))
        )
    sweep = ("sweep", "{F}", "--out", "{W}/sw", "--model", "tests.analysis.fake_model:MODEL")
    for name, item in (("newline", "seed=1\\nseed = 2"), ("return", "seed=1\\rx")):
        text = f'set = ["{item}"]\n'.encode() + SWEEP
        out.append(_case("nonsense", f"sweep set value with a {name}", sweep, "s3.toml", text))
    for base in ("nope", "", "fixed"):
        text = SWEEP + f'[analysis]\nbaseline = "{base}"\n'.encode()
        out.append(_case("nonsense", f"sweep baseline {base!r}", sweep, "s3.toml", text, ("baseline",)))
    return out + export_cases()


def export_cases() -> list[Case]:
    out = []
    for key in ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens"):
        for v in ("-1", "2.5", '"3"', "null", "1e400", "[1]"):
            out.append(
                Case(
                    "nonsense",
                    f"export {key}={v}",
                    ("export", "{W}/run"),
                    {"@summary": f"{key}={v}".encode()},
                    ("summary.json",),
                )
            )
    return out


#: legal but surprising input: exit 0 and one warning line naming it (also recorded in summary.json by run)
WARN_CASES = [
    (
        "cost cheaper with size",
        (*_COST, "cost.table={W}/t.csv"),
        {"t.csv": b"tokens,seconds\n1,0.05\n64,0.01\n"},
        "t.csv",
    ),
    (
        "policy cost cheaper",
        (*_COST, "cost.policy_table={W}/t.csv"),
        {"t.csv": b"tokens,seconds\n1,0.05\n64,0.02\n"},
        "t.csv",
    ),
    (
        "trace shorter than asked",
        (
            "run",
            "--quiet",
            "--set",
            "workload.kind=trace",
            "--set",
            "workload.trace={W}/r.csv",
            "--set",
            "workload.num_requests=40",
        ),
        {"r.csv": GOOD_TRACE},
        "r.csv",
    ),
]
