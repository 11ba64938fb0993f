"""Generated classes of the CLI fuzz catalogue (issue 27): every class crossed with every reader slot.

Classes: special files (a FIFO, /dev/zero, /dev/full, /dev/random, a link to a FIFO) at every input slot;
numbers and types that bypass validation (long integers, out-of-range floats, NaN, null / list / string /
object where a number or mapping belongs, deep nesting) in every JSON, TOML and CSV input; outputs onto
inputs and onto a run's or sweep's own files; names over 255 bytes; flags checked before any work; and the
silent-nonsense list. Special files are spelled as bytes markers (`SPECIAL_*`) that the workspace builder
of test_cli_fuzz.py turns into the real thing. `{W}/run` is a finished run, `{W}/done` a finished sweep.
"""

from __future__ import annotations

import json

from tests.fuzz.base import GOOD_CSV, GOOD_TOML, GOOD_TRACE, RUN, SWEEP, Case

FIFO, ZERO, FULL, RANDOM, FIFO_LINK = (
    b"\0@fifo",
    b"\0@link:/dev/zero",
    b"\0@link:/dev/full",
    b"\0@link:/dev/random",
    b"\0@fifolink",
)
SPECIAL = {"fifo": FIFO, "dev-zero": ZERO, "dev-full": FULL, "dev-random": RANDOM, "link-to-fifo": FIFO_LINK}
LONG = "L" * 256
MEASURED = (
    b"phase,tp,requests,tokens,context_tokens,seconds\n"
    + b"".join(f"decode,1,{r},{r},{512 * r},{0.02 + 0.0002 * r}\n".encode() for r in (1, 2, 4, 8, 16))
    + b"".join(f"prefill,1,1,{t},0,{0.02 + 0.00003 * t}\n".encode() for t in (256, 1024, 4096))
)
CURVES = {
    "version": 1,
    "curves": {"dspark": {d: [0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2] for d in ("chat", "math", "code")}},
}
FIT = {
    "version": 1,
    "model": "dense-8b",
    "gpu": "h100",
    "provenance": {},
    "knobs": {
        "c0": 3e-5,
        "eta_bw": 0.7,
        "eta_f": 0.4,
        "link_bw": 2e11,
        "hop_latency": 1e-6,
        "request_s": 1e-5,  # within the fit bound (≤ 20 µs)
    },
}
BENCH = {"spec_decode_num_drafts": 800, "spec_decode_per_position_acceptance_rates": [0.5, 0.3]}
VRES = {"request_throughput": 2.0, "mean_ttft_ms": 30.0, "output_throughput": 200.0}
PROFILE = {"tp": 1, "context_tokens": 512, "batch_stats": {"1": {"0": 10.0, "3": 14.0}, "8": {"0": 12.0}}}
DRAFT = b"requests,seconds\n1,0.002\n16,0.004\n"
FIT_ARGS = ("--model", "dense-8b", "--gpu", "h100")
VLLM = ("--drafter", "fz", "--domain", "chat")
COST_RUN = (*RUN, "--set", "cost.layers=32")
#: slot -> (argv with {F} for the input path, the suffix its file takes)
SLOTS = {
    "run config": (("run", "--quiet", "{F}"), ".toml"),
    "cost.table": ((*COST_RUN, "--set", "cost.table={F}"), ".csv"),
    "cost.table fit": ((*COST_RUN, "--set", "cost.table={F}"), ".json"),
    "cost.policy_table": ((*COST_RUN, "--set", "cost.policy_table={F}"), ".csv"),
    "drafter.cost": ((*RUN, "--set", "drafter.cost={F}"), ".csv"),
    "drafter.curves": ((*RUN, "--set", "drafter.curves={F}"), ".json"),
    "workload.trace": ((*RUN, "--set", "workload.kind=trace", "--set", "workload.trace={F}"), ".csv"),
    "trace stats": (("trace", "stats", "{F}"), ".csv"),
    "trace convert": (("trace", "convert", "{F}", "--out", "{W}/conv.csv"), ".csv"),
    "trace synth": (("trace", "synth", "{F}", "--n", "4", "--out", "{W}/syn.csv"), ".csv"),
    "sweep file": (
        ("sweep", "{F}", "--out", "{W}/sw", "--model", "tests.analysis.fake_model:MODEL"),
        ".toml",
    ),
    "cost fit": (("cost", "fit", "{F}", *FIT_ARGS, "--out", "{W}/fit.json"), ".csv"),
    "cost fit json": (("cost", "fit", "{F}", *FIT_ARGS, "--out", "{W}/fit.json"), ".json"),
    "cost check": (("cost", "check", "{F}", "--fit", "{W}/good-fit.json"), ".csv"),
    "cost check --fit": (("cost", "check", "{W}/measured.csv", "--fit", "{F}"), ".json"),
    "from-vllm": (("curves", "from-vllm", "{F}", *VLLM, "--out", "{W}/k.json"), ".json"),
    "from-vllm --into": (("curves", "from-vllm", "{W}/bench.json", *VLLM, "--into", "{F}"), ".json"),
    "compare": (("compare", "{W}/run", "{F}"), ".json"),
    "plan --cost": (("plan", "--draft-schedule", "--cost", "{F}", "--layers", "32"), ".csv"),
    "plan --curves": (("plan", "--draft-schedule", "--cost", "h200-v4flash", "--curves", "{F}"), ".json"),
}
#: inputs at a fixed name inside a result folder: (argv, the file)
FOLDER_SLOTS = {
    "export summary.json": (("export", "{W}/run"), "run/summary.json"),
    "export requests.csv": (("export", "{W}/run"), "run/requests.csv"),
    "compare summary.json": (("compare", "{W}/run", "{W}/vres.json"), "run/summary.json"),
    "report sweep.json": (("report", "{W}/done", "--out", "{W}/r.md"), "done/sweep.json"),
    "pareto sweep.json": (("pareto", "{W}/done", "--out", "{W}/p.png"), "done/sweep.json"),
}
#: what every workspace of these cases holds besides the case's own files
BASE_FILES = {
    "measured.csv": MEASURED,
    "good-fit.json": json.dumps(FIT).encode(),
    "bench.json": json.dumps(BENCH).encode(),
    "vres.json": json.dumps(VRES).encode(),
    "trace.csv": GOOD_TRACE,
    "cost.csv": GOOD_CSV,
    "s.toml": SWEEP,
    "afile": b"keep me\n",
}


def _case(category: str, name: str, argv, fname: str, data: bytes, expect=None, slow=False) -> Case:
    argv = tuple(a.replace("{F}", "{W}/" + fname) for a in argv)
    return Case(category, name, argv, {**BASE_FILES, fname: data}, expect or (fname.split("/")[-1],), slow)


def special_cases() -> list[Case]:
    out = []
    for slot, (argv, ext) in SLOTS.items():
        out += [_case("special", f"{slot} {kind}", argv, f"in-{kind}{ext}", m) for kind, m in SPECIAL.items()]
    for slot, (argv, rel) in FOLDER_SLOTS.items():
        out += [_case("special", f"{slot} {kind}", argv, rel, m) for kind, m in SPECIAL.items()]
    for flag in ("--cost", "--curves"):  # fidelity reads its files before any measuring
        argv = ("fidelity", flag, "{F}", "--out", "{W}/fo")
        out.append(_case("special", f"fidelity {flag} fifo", argv, "f.json", FIFO, slow=True))
    return out


# -- numbers and types ------------------------------------------------------------------------------------

LITERALS = {
    "d40": "4" * 40,
    "d4400": "8" * 4400,
    "neg-d40": "-" + "5" * 40,
    "e999": "1e999",
    "neg-e999": "-1e999",
    "2e308": "2e308",
    "NaN": "NaN",
    "-Infinity": "-Infinity",
    "i2^64": str(2**64),
}
TYPES = {
    "null": None,
    "empty-list": [],
    "empty-object": {},
    "numeric-string": "1",
    "false": False,
    "nested": [[1]],
}
#: JSON slot -> (good doc, numeric leaves, leaves where a mapping or list belongs)
JSON_DOCS = {
    "drafter.curves": (
        CURVES,
        [("curves", "dspark", "math", 1)],
        [("curves", "dspark", "code"), ("curves",)],
    ),
    "cost check --fit": (FIT, [("knobs", "eta_f"), ("knobs", "request_s")], [("knobs",)]),
    "cost.table fit": (FIT, [("knobs", "hop_latency")], []),
    "from-vllm": (
        BENCH,
        [("spec_decode_per_position_acceptance_rates", 0)],
        [("spec_decode_per_position_acceptance_rates",)],
    ),
    "compare": (VRES, [("output_throughput",)], []),
    "cost fit json": (
        PROFILE,
        [("batch_stats", "1", "3"), ("tp",)],
        [("batch_stats",), ("batch_stats", "8")],
    ),
}


def _at(doc, path, value) -> dict:
    doc = json.loads(json.dumps(doc))
    cur = doc
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return doc


def _raw(doc, path, literal: str) -> bytes:
    return json.dumps(_at(doc, path, "@@")).encode().replace(b'"@@"', literal.encode())


def _wrong(slot: str, kind: str) -> bool:
    """Whether TYPES[kind] is wrong at a leaf of `slot` (compare reads null as "not measured"; a vLLM
    profile's numbers may be strings, as its keys are)."""
    return not (
        (slot == "compare" and kind == "null") or (slot == "cost fit json" and kind == "numeric-string")
    )


def number_cases() -> list[Case]:
    out = []
    for slot, (doc, leaves, shapes) in JSON_DOCS.items():
        argv = SLOTS[slot][0]
        for path in leaves:
            at = ".".join(map(str, path))
            out += [
                _case("numbers", f"{slot} {at}={k}", argv, "x.json", _raw(doc, path, v))
                for k, v in LITERALS.items()
            ]
            out += [
                _case("types", f"{slot} {at}={k}", argv, "x.json", json.dumps(_at(doc, path, v)).encode())
                for k, v in TYPES.items()
                if _wrong(slot, k)
            ]
        for path in shapes:
            at = ".".join(map(str, path))
            out += [
                _case("types", f"{slot} {at}={k}", argv, "x.json", json.dumps(_at(doc, path, v)).encode())
                for k, v in (("null", None), ("number", 3), ("string", "x"), ("true", True))
            ]
        for k, text in (
            ("deep-list", b"[" * 3000 + b"]" * 3000),
            ("deep-map", b'{"a":' * 3000 + b"1" + b"}" * 3000),
        ):
            out.append(_case("types", f"{slot} {k}", argv, "x.json", text))
    return out + toml_cases() + csv_cases()


def toml_cases() -> list[Case]:
    out = []
    config_argv, sweep_argv = SLOTS["run config"][0], SLOTS["sweep file"][0]
    for k in ("d40", "d4400", "neg-d40", "i2^64"):
        lit = LITERALS[k].encode()
        out.append(
            _case(
                "numbers",
                f"config seed={k}",
                config_argv,
                "c.toml",
                GOOD_TOML.replace(b"seed = 1", b"seed = " + lit),
            )
        )
        out.append(
            _case(
                "numbers",
                f"config concurrency={k}",
                config_argv,
                "c.toml",
                GOOD_TOML.replace(b"= 4", b"= " + lit),
            )
        )
        out.append(
            _case(
                "numbers",
                f"sweep axis={k}",
                sweep_argv,
                "s2.toml",
                SWEEP.replace(b"[2, 4]", b"[2, " + lit + b"]"),
            )
        )
    for k, text in (
        ("deep-array", b"x = " + b"[" * 3000),
        ("deep-table", b"x = " + b"{y = " * 2000),
        ("deep-mixed", b"x = " + b"[{a = " * 1500),
    ):
        out.append(_case("types", f"config {k}", config_argv, "c.toml", text))
        out.append(_case("types", f"sweep {k}", sweep_argv, "s2.toml", text))
    return out


CSV_LITERALS = {
    "d40": "4" * 40,
    "d4400": "8" * 4400,
    "1e999": "1e999",
    "-1e999": "-1e999",
    "1e-999": "1e-999",
    "inf": "inf",
    "0x1p3": "0x1p3",
    "list": "[1]",
}
#: slot -> (good CSV, the column index corrupted in its second data row)
CSV_DOCS = {
    "cost.table": (GOOD_CSV, 1),
    "drafter.cost": (DRAFT, 1),
    "cost fit": (MEASURED, 5),
    "cost check": (MEASURED, 2),
    "trace stats": (GOOD_TRACE, 2),
    "workload.trace": (GOOD_TRACE, 1),
}


def csv_cases() -> list[Case]:
    out = []
    for slot, (good, col) in CSV_DOCS.items():
        lines = good.splitlines()
        for k, v in CSV_LITERALS.items():
            row = lines[2].split(b",")
            row[col] = v.encode()
            text = b"\n".join([*lines[:2], b",".join(row), *lines[3:]]) + b"\n"
            if not ("trace" in slot and k == "1e-999"):  # 0 tokens: a legal (dropped) request
                out.append(_case("numbers", f"csv {slot} {k}", SLOTS[slot][0], "x.csv", text))
    return out
