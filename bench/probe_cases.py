"""The probes of bench/probe_inputs.py: hostile but realistic inputs that tests/fuzz does not list.

Generated, class by class, over every reader slot and command (see probe_inputs.py for how they run and
what "handled" means). Kept apart from the catalogue on purpose: a held-back check of the contract.

May import: the standard library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

FAKE = "tests.analysis.fake_model:MODEL"
LONG = "n" * 300


@dataclass
class Probe:
    id: str
    argv: list[str]
    setup: dict = field(default_factory=dict)  # name -> bytes | "fifo" | "socket" | "dir" | ("link", target)
    expect: str = "refuse"
    names: tuple[str, ...] = ()
    limit_s: float = 20.0
    lock: str | None = None  # a folder the parent holds flock'ed during the run


# -- good inputs the probes corrupt ---------------------------------------------------------------------

COST = b"tokens,seconds\n1,0.010\n64,0.012\n512,0.020\n4096,0.090\n"
MEASURED = (
    b"phase,tp,requests,tokens,context_tokens,seconds\n"
    + b"".join(f"decode,1,{r},{r},{1024 * r},{0.01 + 0.0001 * r}\n".encode() for r in (1, 2, 4, 8, 16, 32))
    + b"".join(f"prefill,1,1,{t},0,{0.01 + 0.00002 * t}\n".encode() for t in (128, 512, 2048, 8192))
)
TRACE = b"arrival_s,input_tokens,output_tokens\n0.0,100,50\n0.5,200,20\n1.0,300,30\n"
CONFIG = b'seed = 1\n[workload]\nkind = "closed"\nnum_requests = 20\nconcurrency = 4\n'
SWEEP = (
    b'name = "pz"\n[base]\nseed = 0\n[base.workload]\nkind = "closed"\nnum_requests = 20\n'
    b'[axes]\n"workload.concurrency" = [2, 4]\n'
)
CURVES = {
    "version": 1,
    "curves": {"dspark": {d: [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3] for d in ("chat", "math", "code")}},
}
BENCH = {"spec_decode_num_drafts": 5000, "spec_decode_per_position_acceptance_rates": [0.6, 0.4, 0.3]}
VRES = {"request_throughput": 3.0, "mean_ttft_ms": 40.0, "mean_tpot_ms": 9.0, "output_throughput": 300.0}
FIT = {
    "version": 1,
    "model": "dense-8b",
    "gpu": "h100",
    "provenance": {},
    "knobs": {
        "c0": 4e-5,
        "eta_bw": 0.8,
        "eta_f": 0.5,
        "link_bw": 1e11,
        "hop_latency": 2e-6,
        "request_s": 1e-5,
    },
}
PROM = (
    "vllm:spec_decode_num_drafts_total 1000\n"
    + "".join(
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {600 - 150 * i}\n'
        for i in range(3)
    )
).encode()

#: special files, none of the kinds tests/fuzz uses (FIFO, /dev/zero, /dev/full, /dev/random, link -> FIFO)
SPECIAL = {
    "fifo-chain": "chain",  # a link to a link to a FIFO
    "proc": ("link", "/proc/self/status"),  # procfs: a "regular" file whose size says 0
    "urandom": ("link", "/dev/urandom"),
    "null": ("link", "/dev/null"),
    "socket": "socket",
    "dir": "dir",
}
BIG = {
    "int400": "1" * 400,
    "int5000": "7" * 5000,
    "neg400": "-" + "3" * 400,
    "e400": "1e400",
    "ninf": "-1e400",
    "NaN": "NaN",
    "Inf": "Infinity",
    "int25": "9" * 25,
}
TYPES = {"null": None, "list": [1, 2], "str": "fast", "obj": {"a": 1}, "bool": True}


def _j(doc) -> bytes:
    return json.dumps(doc).encode()


def _set(doc: dict, path: tuple, value) -> dict:
    doc = json.loads(json.dumps(doc))
    cur = doc
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return doc


def _raw(doc: dict, path: tuple, literal: str) -> bytes:
    """`doc` with the value at `path` replaced by a raw JSON literal (1e400, NaN, 400 digits)."""
    return _j(_set(doc, path, "@@X@@")).replace(b'"@@X@@"', literal.encode())


# -- the reader slots: how each command takes one input file -----------------------------------------------

RUN = ["run", "--quiet", "--set", "workload.num_requests=20"]
SLOTS = {  # name -> (argv with {F} = the input path, good bytes)
    "config": (["run", "--quiet", "{F}"], CONFIG),
    "cost.table": ([*RUN, "--set", "cost.layers=32", "--set", "cost.table={F}"], COST),
    "cost.policy_table": ([*RUN, "--set", "cost.layers=32", "--set", "cost.policy_table={F}"], COST),
    "drafter.cost": ([*RUN, "--set", "drafter.cost={F}"], b"requests,seconds\n1,0.001\n8,0.002\n"),
    "drafter.curves": ([*RUN, "--set", "drafter.curves={F}"], _j(CURVES)),
    "workload.trace": ([*RUN, "--set", "workload.kind=trace", "--set", "workload.trace={F}"], TRACE),
    "trace stats": (["trace", "stats", "{F}"], TRACE),
    "trace convert": (["trace", "convert", "{F}", "--out", "{W}/o.csv"], TRACE),
    "trace synth": (["trace", "synth", "{F}", "--n", "5", "--out", "{W}/o.csv"], TRACE),
    "sweep": (["sweep", "{F}", "--out", "{W}/so", "--model", FAKE, "--quiet"], SWEEP),
    "cost fit": (
        ["cost", "fit", "{F}", "--model", "dense-8b", "--gpu", "h100", "--out", "{W}/f.json"],
        MEASURED,
    ),
    "cost check data": (["cost", "check", "{F}", "--fit", "{W}/fit.json"], MEASURED),
    "cost check fit": (["cost", "check", "{W}/measured.csv", "--fit", "{F}"], _j(FIT)),
    "from-vllm": (
        ["curves", "from-vllm", "{F}", "--drafter", "d", "--domain", "chat", "--out", "{W}/k.json"],
        _j(BENCH),
    ),
    "from-vllm into": (
        ["curves", "from-vllm", "{W}/bench.json", "--drafter", "d", "--domain", "chat", "--into", "{F}"],
        _j(CURVES),
    ),
    "compare vllm": (["compare", "{W}/run", "{F}"], _j(VRES)),
    "plan cost": (["plan", "--draft-schedule", "--cost", "{F}", "--layers", "32"], COST),
    "plan curves": (["plan", "--draft-schedule", "--cost", "h200-v4flash", "--curves", "{F}"], _j(CURVES)),
}
#: slots whose input sits at a fixed name inside a result folder
FOLDER_SLOTS = {
    "export summary": (["export", "{W}/run"], "run/summary.json"),
    "export requests": (["export", "{W}/run"], "run/requests.csv"),
    "compare summary": (["compare", "{W}/run", "{W}/vres.json"], "run/summary.json"),
    "report manifest": (["report", "{W}/sweep"], "sweep/sweep.json"),
    "pareto manifest": (["pareto", "{W}/sweep"], "sweep/sweep.json"),
}
JSON_SLOTS = {  # slot -> (good doc, [paths of numeric leaves], [paths where a mapping belongs])
    "drafter.curves": (
        CURVES,
        [("curves", "dspark", "chat", 2), ("version",)],
        [("curves",), ("curves", "dspark")],
    ),
    "cost check fit": (FIT, [("knobs", "c0"), ("knobs", "eta_bw"), ("knobs", "link_bw")], [("knobs",)]),
    "from-vllm": (BENCH, [("spec_decode_num_drafts",), ("spec_decode_per_position_acceptance_rates", 1)], []),
    "compare vllm": (VRES, [("request_throughput",), ("mean_ttft_ms",)], []),
    "plan curves": (CURVES, [("curves", "dspark", "math", 0), ("version",)], [("curves", "dspark")]),
    "from-vllm into": (CURVES, [("curves", "dspark", "code", 3)], [("curves",), ("curves", "dspark")]),
}


def _p(pid: str, argv: list[str], name: str, data, **kw) -> Probe:
    """A probe of `argv` with its input `{F}` at workspace file `name` (holding `data`)."""
    names = kw.pop("names", (name,))
    return Probe(pid, [a.replace("{F}", "{W}/" + name) for a in argv], {name: data}, names=names, **kw)


def special_probes() -> list[Probe]:
    out = []
    for slot, (argv, _) in SLOTS.items():
        ext = ".json" if "json" in " ".join(argv) or "curves" in slot or "fit" in slot.split()[-1] else ".csv"
        out += [_p(f"special {slot} {k}", argv, f"probe-{k}{ext}", spec) for k, spec in SPECIAL.items()]
    for slot, (argv, rel) in FOLDER_SLOTS.items():
        for kind, spec in SPECIAL.items():
            if kind != "dir":
                out.append(Probe(f"special {slot} {kind}", argv, {rel: spec}, names=(Path(rel).name,)))
    return out


def json_probes() -> list[Probe]:
    out = []
    for slot, (doc, leaves, maps) in JSON_SLOTS.items():
        argv = SLOTS[slot][0]
        for path in leaves:
            at = ".".join(map(str, path))
            out += [_p(f"number {slot} {at}={k}", argv, "x.json", _raw(doc, path, v)) for k, v in BIG.items()]
            out += [
                _p(f"type {slot} {at}={k}", argv, "x.json", _j(_set(doc, path, v)))
                for k, v in TYPES.items()
                if not (slot == "compare vllm" and v is None)  # vLLM writes null for "not measured"
            ]
        for path in maps:
            at = ".".join(map(str, path))
            for k, v in TYPES.items():
                if k != "obj":
                    out.append(_p(f"type {slot} {at}={k}", argv, "x.json", _j(_set(doc, path, v))))
        out += [_p(f"shape {slot} {k}", argv, "x.json", text) for k, text in JSON_SHAPES.items()]
    return out


JSON_SHAPES = {"top-null": b"null", "top-list": b"[1]", "top-num": b"3", "deep": b"[" * 5000,
               "deep-obj": b'{"a":' * 5000, "top-str": b'"x"'}  # fmt: skip


def toml_csv_probes() -> list[Probe]:
    out = []
    for slot in ("config", "sweep"):
        argv, good = SLOTS[slot]
        for label, literal in BIG.items():
            if label not in ("NaN", "Inf"):
                pre, post = (b"[metrics]\nwarmup = ", b"\n") if slot == "config" else (b'"seed" = [', b"]\n")
                out.append(_p(f"number {slot} {label}", argv, "x.toml", good + pre + literal.encode() + post))
        for label, text in (
            ("deep-array", b"a = " + b"[" * 5000),
            ("deep-inline", b"a = " + b"{b = " * 3000),
        ):
            out.append(_p(f"shape {slot} {label}", argv, "x.toml", text))
    for slot in ("cost.table", "cost fit", "trace stats", "workload.trace", "drafter.cost"):
        argv, good = SLOTS[slot]
        lines = good.splitlines()
        for label, literal in BIG.items():
            row = lines[2].split(b",")
            row[1 if "trace" in slot else -1] = literal.encode()
            text = b"\n".join([*lines[:2], b",".join(row), *lines[3:]]) + b"\n"
            out.append(_p(f"number {slot} {label}", argv, "x.csv", text))
    return out


def summary_probes() -> list[Probe]:
    out = []
    values = {  # none of tests/fuzz's values (-1, 2.5, "3", null, 1e400, [1])
        **{k: v for k, v in BIG.items() if k not in ("int5000", "e400")},
        "e500": "6e500",
        **{k: json.dumps(v) for k, v in TYPES.items() if v is not None},
        "empty-obj": "{}",
    }
    for key in ("spec_drafts", "spec_accepted_tokens", "itl_s_mean"):
        for label, literal in values.items():
            if key == "itl_s_mean" and label in ("NaN", "null"):
                continue  # no ITL measured (one-token outputs): legal, written as null
            setup = {"@summary": (key, literal)}
            out.append(Probe(f"summary {key}={label}", ["export", "{W}/run"], setup, names=("summary.json",)))
    for label, value in (("neg", "-3"), ("frac", "0.25")):
        setup = {"@summary": ("spec_drafts", value)}
        out.append(
            Probe(f"summary spec_drafts {label}", ["export", "{W}/run"], setup, names=("spec_drafts",))
        )
    return out
