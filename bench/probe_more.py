"""More probes of bench/probe_inputs.py: outputs onto inputs and result files, runs into sweep folders,
long names, late flag checks and the silent-nonsense list of issue 27.

May import: the standard library, `bench.probe_cases`.
"""

from __future__ import annotations

from bench.probe_cases import (
    FAKE,
    FIT,
    LONG,
    RUN,
    SLOTS,
    SWEEP,
    TRACE,
    Probe,
    _j,
    _p,
    _set,
    json_probes,
    special_probes,
    summary_probes,
    toml_csv_probes,
)

FIT_ARGS = ["--model", "dense-8b", "--gpu", "h100"]
VLLM = ["--drafter", "d", "--domain", "chat"]
#: (id, argv, the word the error must name); the output lands on an input or a result folder's own file
ONTO = [
    ("report sweep.json", ["report", "{W}/sweep", "--out", "{W}/sweep/sweep.json"], "sweep.json"),
    ("report results.csv", ["report", "{W}/sweep", "--out", "{W}/sweep/results.csv"], "results.csv"),
    ("report cell", ["report", "{W}/sweep", "--out", "{W}/sweep/cells/x.json"], "x.json"),
    ("pareto results.jsonl", ["pareto", "{W}/sweep", "--out", "{W}/sweep/results.jsonl"], "results.jsonl"),
    ("export summary", ["export", "{W}/run", "--out", "{W}/run/summary.json"], "summary.json"),
    ("export requests", ["export", "{W}/run", "--out", "{W}/run/requests.csv"], "requests.csv"),
    ("export config", ["export", "{W}/run", "--out", "{W}/run/config.toml"], "config.toml"),
    ("export onto vres", ["export", "{W}/run", "--out", "{W}/run/series.csv"], "series.csv"),
    (
        "cost fit data",
        ["cost", "fit", "{W}/measured.csv", *FIT_ARGS, "--out", "{W}/measured.csv"],
        "measured.csv",
    ),
    (
        "from-vllm scrape",
        ["curves", "from-vllm", "{W}/bench.json", *VLLM, "--out", "{W}/bench.json"],
        "bench.json",
    ),
    ("from-vllm prom", ["curves", "from-vllm", "{W}/prom.txt", *VLLM, "--out", "{W}/prom.txt"], "prom.txt"),
    ("convert input", ["trace", "convert", "{W}/trace.csv", "--out", "{W}/trace.csv"], "trace.csv"),
    ("synth input", ["trace", "synth", "{W}/trace.csv", "--n", "5", "--out", "{W}/trace.csv"], "trace.csv"),
    (
        "plan cost",
        ["plan", "--draft-schedule", "--cost", "{W}/cost.csv", "--layers", "32", "--json", "{W}/cost.csv"],
        "cost.csv",
    ),
    ("run into finished sweep", [*RUN, "--out", "{W}/sweep"], "sweep"),
    ("run into sweep cells", [*RUN, "--out", "{W}/sweep/cells"], "cells"),
    ("plan json dir/", ["plan", "--draft-schedule", "--cost", "h200-v4flash", "--json", "{W}/jd/"], "--json"),
]
LONG_OUT = {
    "run out": [*RUN, "--out", f"{{W}}/{LONG}"],
    "sweep out": ["sweep", "{W}/s.toml", "--out", f"{{W}}/{LONG}", "--model", FAKE, "--quiet"],
    "report out": ["report", "{W}/sweep", "--out", f"{{W}}/{LONG}.md"],
    "pareto out": ["pareto", "{W}/sweep", "--out", f"{{W}}/{LONG}.png"],
    "export out": ["export", "{W}/run", "--out", f"{{W}}/{LONG}.json"],
    "synth out": ["trace", "synth", "{W}/trace.csv", "--n", "5", "--out", f"{{W}}/{LONG}.csv"],
    "convert out": ["trace", "convert", "{W}/trace.csv", "--out", f"{{W}}/{LONG}.csv"],
    "cost fit out": ["cost", "fit", "{W}/measured.csv", *FIT_ARGS, "--out", f"{{W}}/{LONG}.json"],
    "from-vllm out": ["curves", "from-vllm", "{W}/bench.json", *VLLM, "--out", f"{{W}}/{LONG}.json"],
    "plan json": ["plan", "--draft-schedule", "--cost", "h200-v4flash", "--json", f"{{W}}/{LONG}.json"],
    "run out deep": [*RUN, "--out", f"{{W}}/a/{LONG}/b"],
}


def output_probes() -> list[Probe]:
    out = [Probe(f"onto {n}", argv, names=(w,)) for n, argv, w in ONTO]
    out.append(
        Probe(
            "run into locked folder",
            [*RUN, "--out", "{W}/busy"],
            {"busy/": "dir"},
            names=("busy",),
            lock="busy",
        )
    )
    out += [Probe(f"long {k}", v, names=(LONG[:20],)) for k, v in LONG_OUT.items()]
    for slot, (argv, _) in SLOTS.items():
        long_in = [a.replace("{F}", f"{{W}}/{LONG}.x") for a in argv]
        out.append(Probe(f"long input {slot}", long_in, names=(LONG[:20],)))
    return out


def flag_probes() -> list[Probe]:
    fid = ["fidelity", "--out", "{W}/fo", "--quiet"]
    plan = ["plan", "--draft-schedule", "--cost", "h200-v4flash"]
    synth = ["trace", "synth", "{W}/trace.csv", "--n", "5", "--out", "{W}/o.csv"]
    slow = [
        ("fidelity policies", [*fid, "--policies", "nope"], "--policies"),
        ("fidelity draft seconds", [*fid, "--draft-seconds", "-1"], "--draft-seconds"),
        ("fidelity warmup", [*fid, "--warmup", "2"], "--warmup"),
        ("fidelity fixed k", [*fid, "--fixed-k", "-1"], "--fixed-k"),
        (
            "profile steps-out",
            ["engine", "profile", "--out", "{W}/p.csv", "--steps-out", "{W}/afile/s.csv"],
            "afile",
        ),
    ]
    fast = [
        ("plan batch sizes", [*plan, "--batch-sizes", "2000000"], "--batch-sizes"),
        ("plan layers", [*plan, "--layers", "100000"], "--layers"),
        ("plan gamma", [*plan, "--gamma", "500"], "--gamma"),
        ("synth cv", [*synth, "--cv", "1e6"], "--cv"),
        ("synth rate", [*synth, "--rate", "1e9"], "--rate"),
        ("k above gamma", [*RUN, "--set", "policy.name=fixed", "--set", "policy.k=9"], "policy.k"),
    ]
    out = [Probe(f"flag {n}", a, names=(w,), limit_s=120) for n, a, w in slow]
    return out + [Probe(f"flag {n}", a, names=(w,)) for n, a, w in fast]


COST_RUN = [*RUN, "--set", "cost.layers=32", "--set", "cost.table={F}"]
NONSENSE_COST = {
    "tiny": b"tokens,seconds\n1,1e-300\n64,1e-300\n",
    "huge": b"tokens,seconds\n1,1e300\n64,1e300\n",
    "dup-seconds": b"tokens,seconds,seconds\n1,0.01,0.02\n64,0.02,0.03\n",
    "dup-tokens": b"tokens,tokens,seconds\n1,1,0.01\n64,64,0.02\n",
}


def nonsense_probes() -> list[Probe]:
    out = [_p(f"nonsense cost {k}", COST_RUN, "x.csv", v) for k, v in NONSENSE_COST.items()]
    both = b"tokens,requests,seconds\n1,1,0.001\n8,8,0.002\n"
    out.append(_p("nonsense drafter.cost both keys", [*RUN, "--set", "drafter.cost={F}"], "x.csv", both))
    fit = ["cost", "check", "{W}/measured.csv", "--fit", "{F}"]
    for knob, value in (("bytes_per_param", 0), ("ep", 0.5), ("c0", 1e300), ("eta_bw", 2), ("link_bw", 1)):
        out.append(_p(f"nonsense fit {knob}={value}", fit, "x.json", _j(_set(FIT, ("knobs", knob), value))))
    out.append(_p("nonsense fit version 99", fit, "x.json", _j(_set(FIT, ("version",), 99))))
    sweep = ["sweep", "{F}", "--out", "{W}/so", "--model", FAKE, "--quiet"]
    newline = b'set = ["workload.num_requests=7\\nseed = 3"]\n' + SWEEP
    out.append(_p("nonsense sweep set newline", sweep, "x.toml", newline))
    baseline = SWEEP + b'[analysis]\nbaseline = "nope"\n'
    out.append(_p("nonsense sweep baseline", sweep, "x.toml", baseline, names=("baseline",)))
    return out + warn_probes()


def warn_probes() -> list[Probe]:
    cheaper = b"tokens,seconds\n1,0.05\n64,0.01\n512,0.02\n"
    out = [_p("warn cheaper cost", COST_RUN, "x.csv", cheaper, expect="warn")]
    short = [
        *RUN[:2],
        "--set",
        "workload.kind=trace",
        "--set",
        "workload.trace={F}",
        "--set",
        "workload.num_requests=50",
    ]
    out.append(
        _p("warn short trace", short, "x.csv", b"\n".join(TRACE.splitlines()[:3]) + b"\n", expect="warn")
    )
    report = ["report", "{W}/sweep", "--out", "{W}/r.md"]
    for label, value in (("string", '"fast"'), ("null", "null"), ("bool", "true")):
        out.append(
            Probe(f"warn cell metric {label}", report, {"@cell": value}, expect="warn", names=("cells",))
        )
    return out


def all_probes() -> list[Probe]:
    probes = [*special_probes(), *json_probes(), *toml_csv_probes(), *summary_probes()]
    probes += [*output_probes(), *flag_probes(), *nonsense_probes(), *new_command_probes()]
    ids = [p.id for p in probes]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1][:5]
    return probes


#: the commands other issues added (search, disagg, validate, cost calibrate): their input slots
NEW_SLOTS = {
    "search space": [
        "search",
        "{F}",
        "--traffic",
        "azure2023-code",
        "--slo",
        "ttft_p90<=3s",
        "--out",
        "{W}/sr",
    ],
    "search traffic": [
        "search",
        "{W}/s.toml",
        "--traffic",
        "{F}",
        "--slo",
        "ttft_p90<=3s",
        "--out",
        "{W}/sr",
    ],
    "disagg config": ["disagg", "{F}"],
    "validate workloads": ["validate", "{W}/cost.csv", "--workloads", "{F}"],
    "validate bench": ["validate", "{F}"],
    "calibrate workloads": [
        "cost",
        "calibrate",
        "{W}/cost.csv",
        "--workloads",
        "{F}",
        "--gpu",
        "h100",
        "--out",
        "{W}/kn.json",
    ],
}


def new_command_probes() -> list[Probe]:
    from bench.probe_cases import BIG, SPECIAL

    out = []
    for slot, argv in NEW_SLOTS.items():
        ext = ".toml" if slot.startswith(("search", "disagg")) else ".json"
        out += [_p(f"newcmd {slot} {k}", argv, f"nc-{k}{ext}", spec) for k, spec in SPECIAL.items()]
        body = (
            (b"x = " if ext == ".toml" else b'{"x": ')
            + BIG["int400"].encode()
            + (b"" if ext == ".toml" else b"}")
        )
        out.append(_p(f"newcmd {slot} int400", argv, f"nc{ext}", body))
        out.append(
            _p(f"newcmd {slot} deep", argv, f"nc{ext}", (b"x = " if ext == ".toml" else b"") + b"[" * 4000)
        )
    return out
