"""Bad inputs of the speculative dataset format (`specbed validate --spec`, `specbed cost calibrate --spec`):
each a one-line stderr naming the file, the row and the field, exit 2."""

from __future__ import annotations

import json

from tests.fuzz.base import Case

HEADER = ("case_id,source,citation,split,engine,engine_version,gpu,tp,model,precision,drafter,drafter_model,"
          "shape,k,tree_nodes,workload,batch,request_rate,temperature,metric,measured,baseline,"
          "acceptance_length,acceptance_rates,quote\n")  # fmt: skip
GOOD = dict(case_id="c1", source="s", citation="x", split="train", engine="sglang", engine_version="0.4.4",
            gpu="h100", tp="1", model="llama3.1-8b", precision="", drafter="eagle3", drafter_model="",
            shape="chain", k="3", tree_nodes="", workload="mt-bench", batch="4", request_rate="",
            temperature="", metric="speedup", measured="1.8", baseline="", acceptance_length="2.6",
            acceptance_rates="", quote="q")  # fmt: skip


def _csv(**kw) -> bytes:
    row = {**GOOD, **kw}
    return (HEADER + ",".join(row.values()) + "\n").encode()


BAD = {
    "split": ("split", "test"),
    "engine": ("engine", "tgi"),
    "gpu": ("gpu", ""),
    "tp": ("tp", "two"),
    "model": ("model", ""),
    "engine_version": ("engine_version", " "),
    "precision": ("precision", "int3"),
    "tp zero": ("tp", "0"),
    "drafter": ("drafter", "lookahead"),
    "shape": ("shape", "dag"),
    "k zero": ("k", "0"),
    "k float": ("k", "2.5"),
    "tree_nodes on a chain": ("tree_nodes", "8"),
    "batch negative": ("batch", "-4"),
    "metric": ("metric", "qps"),
    "measured nan": ("measured", "nan"),
    "measured blank": ("measured", ""),
    "acceptance above k+1": ("acceptance_length", "9"),
    "acceptance rate above 1": ("acceptance_rates", "0.8;1.2"),
    "acceptance rates text": ("acceptance_rates", "0.8;high"),
}


def spec_dataset_cases() -> list[Case]:
    cases = []
    for name, (fieldname, value) in BAD.items():
        files = {"s.csv": _csv(**{fieldname: value})}
        expect = ("s.csv:2", "tree_nodes" if name == "tree_nodes on a chain" else fieldname.split()[0])
        cases.append(Case("spec", f"validate {name}", ("validate", "--spec", "{W}/s.csv"), files, expect))
        cases.append(
            Case("spec", f"calibrate {name}", ("cost", "calibrate", "--spec", "{W}/s.csv"), files, expect)
        )
    more = {
        "header lacks a column": (b"case_id,source\nc1,s\n", ("s.csv", "citation")),
        "header only": (HEADER.encode(), ("s.csv", "no cases")),
        "duplicate case": (_csv() + _csv()[len(HEADER) :], ("s.csv:3", "case_id")),
        "not utf-8": (b"\xff\xfe" + _csv(), ("s.csv",)),
        "extra cell": (_csv().rstrip(b"\n") + b",extra\n", ("s.csv:2",)),
    }
    for name, (body, expect) in more.items():
        cases.append(Case("spec", name, ("validate", "--spec", "{W}/s.csv"), {"s.csv": body}, expect))
    cases.append(
        Case(
            "spec",
            "knobs out of bounds",
            ("validate", "--spec", "{W}/s.csv", "--knobs", "{W}/k.json"),
            {"s.csv": _csv(), "k.json": b'{"knobs": {"op_s": 1.0}}'},
            ("k.json", "op_s"),
        )
    )
    return cases + bench_pair_cases()


_BASE = {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "max_concurrency": 8, "output_throughput": 800.0,
         "mean_tpot_ms": 9.5}  # fmt: skip
_SPEC = {**_BASE, "output_throughput": 1400.0, "mean_tpot_ms": 5.4, "spec_decode_num_drafts": 1000,
         "spec_decode_per_position_acceptance_rates": [0.75, 0.52, 0.33]}  # fmt: skip


def bench_pair_cases() -> list[Case]:
    """`specbed validate --spec --bench-pair SPEC.json BASE.json`: bad result files, one line each."""
    bad = {
        "baseline drafted": (_SPEC, _SPEC, ("b.json", "spec_decode_num_drafts")),
        "spec without counters": (_BASE, _BASE, ("s.json", "spec_decode_num_drafts")),
        "rate above 1": ({**_SPEC, "spec_decode_per_position_acceptance_rates": [1.5]}, _BASE,
                         ("s.json", "spec_decode_per_position_acceptance_rates")),
        "concurrency differs": (_SPEC, {**_BASE, "max_concurrency": 16}, ("b.json", "max_concurrency")),
        "unknown model": ({**_SPEC, "model_id": "acme/x"}, _BASE, ("s.json", "model_id")),
        "throughput zero": (_SPEC, {**_BASE, "output_throughput": 0}, ("b.json", "output_throughput")),
        "tpot missing": ({k: v for k, v in _SPEC.items() if k != "mean_tpot_ms"}, _BASE,
                         ("s.json", "mean_tpot_ms")),
    }  # fmt: skip
    cases = []
    for name, (spec, base, expect) in bad.items():
        files = {"s.json": json.dumps(spec).encode(), "b.json": json.dumps(base).encode()}
        argv = ("validate", "--spec", "--bench-pair", "{W}/s.json", "{W}/b.json", "--no-loso")
        cases.append(Case("spec", f"bench pair {name}", argv, files, expect))
    argv = ("validate", "--spec", "--bench-pair", "{W}/s.json", "{W}/b.json", "--drafter", "lookahead")
    files = {"s.json": json.dumps(_SPEC).encode(), "b.json": json.dumps(_BASE).encode()}
    cases.append(Case("spec", "bench pair drafter", argv, files, ("--drafter",)))
    cases.append(Case("spec", "nothing to replay", ("validate", "--spec"), {}, ("files",)))
    return cases
