"""Fuzz cases of the commands other issues add (`specbed search`, and whichever of `validate`,
`cost calibrate`, disaggregated pool configs have landed): the same classes as tests/fuzz/generated.py —
special files, numbers and types, deep nesting, long names, bad flags, outputs onto inputs."""

from __future__ import annotations

import json

from specbed.cli import SUBCOMMANDS as KNOWN
from tests.fuzz.base import Case
from tests.fuzz.generated import LONG, SPECIAL

SPACE = b"""name = "fzs"
[axes]
"cost.table" = ["h100-dense8b"]
"server.replicas" = [1, 2]
[search]
rungs = [0.5, 1.0]
keep = 2
"""
TRAFFIC = b"""seed = 3
[workload]
kind = "poisson"
rate = 20.0
num_requests = 40
input_tokens = 128
output_tokens = 32
"""
PRICES = b'currency = "USD"\n[gpu.h100]\nusd_per_hour = 2.5\nsource = "fz"\ndate = "2026"\n'
SLO = "ttft_p90<=2s,itl_p50<=50ms"
SG = "search-gen"
FILES = {"space.toml": SPACE, "traffic.toml": TRAFFIC, "prices.toml": PRICES, "afile": b"keep me\n"}


def _search(*extra: str, space="{W}/space.toml", traffic="{W}/traffic.toml", out="{W}/so") -> tuple[str, ...]:
    return ("search", space, "--traffic", traffic, "--slo", SLO, "--out", out, "--quiet", *extra)


def search_cases() -> list[Case]:
    if "search" not in KNOWN:
        return []
    out = []
    slots = {
        "space": lambda f: _search(space=f),
        "traffic": lambda f: _search(traffic=f),
        "prices": lambda f: _search("--prices", f),
    }
    for slot, argv in slots.items():
        for kind, marker in SPECIAL.items():
            out.append(
                Case(
                    "search",
                    f"{slot} {kind}",
                    argv(f"{{W}}/x-{kind}.toml"),
                    {**FILES, f"x-{kind}.toml": marker},
                    (f"x-{kind}.toml",),
                )
            )
        for name, text in {
            "d40": b"x = " + b"4" * 40,
            "d4400": b"x = " + b"8" * 4400,
            "deep": b"x = " + b"[" * 3000,
            "binary": b"\x00\xff" * 20,
            "truncated": SPACE[:25],
        }.items():
            out.append(Case(SG, f"{slot} {name}", argv("{W}/x.toml"), {**FILES, "x.toml": text}, ("x.toml",)))
        out.append(Case(SG, f"{slot} long name", argv("{W}/" + LONG + ".toml"), FILES, (LONG[:16],)))
    prices = {
        "price negative": PRICES.replace(b"2.5", b"-1"),
        "price nan": PRICES.replace(b"2.5", b"nan"),
        "price string": PRICES.replace(b"2.5", b'"cheap"'),
        "price huge": PRICES.replace(b"2.5", b"1" * 30),
    }
    for name, text in prices.items():
        out.append(Case(SG, name, _search("--prices", "{W}/p.toml"), {**FILES, "p.toml": text}, ("p.toml",)))
    flags = {
        "slo garbage": (_search()[:5] + ("nonsense",) + _search()[6:], "--slo"),
        "slo unknown metric": (_search()[:5] + ("bogus_p90<=1s",) + _search()[6:], "bogus"),
        "speedup -1": (_search("--speedup", "-1"), "speedup"),
        "speedup nan": (_search("--speedup", "nan"), "speedup"),
        "budget -1": (_search("--budget-s", "-1"), "budget"),
        "jobs 0": (_search("--jobs", "0"), "jobs"),
        "resume+force": (_search("--resume", "--force"), "--force"),
        "backend slurm": (_search("--backend", "slurm"), "backend"),
        "out under a file": (_search(out="{W}/afile/o"), "afile"),
        "out long name": (_search(out="{W}/" + LONG), LONG[:16]),
        "out a finished sweep": (_search(out="{W}/done"), "done"),
    }
    for name, (argv, word) in flags.items():
        out.append(Case(SG, name, argv, FILES, (word,)))
    return out


DISAGG = b"""seed = 0
[workload]
kind = "poisson"
rate = 20.0
num_requests = 30
input_tokens = 512
output_tokens = 32
[cost]
table = "h200-v4flash"
[handoff]
link = "ib-400g"
model = "deepseek-v3"
[[pool]]
role = "prefill"
replicas = 1
[[pool]]
role = "decode"
replicas = 1
"""


def disagg_cases() -> list[Case]:
    """`specbed disagg` with [[pool]] tables: the config file's classes and its pools' own fields."""
    if "disagg" not in KNOWN:
        return []
    argv = ("disagg", "{W}/d.toml")
    out = [
        Case("disagg-gen", f"config {kind}", argv, {"d.toml": marker, "afile": b"x\n"}, ("d.toml",))
        for kind, marker in SPECIAL.items()
    ]
    bad = {
        "replicas 0": DISAGG.replace(b"replicas = 1\n[[pool]]", b"replicas = 0\n[[pool]]"),
        "replicas -1": DISAGG.replace(b'role = "decode"\nreplicas = 1', b'role = "decode"\nreplicas = -1'),
        "replicas d40": DISAGG.replace(
            b'role = "decode"\nreplicas = 1', b'role = "decode"\nreplicas = ' + b"4" * 40
        ),
        "replicas string": DISAGG.replace(
            b'role = "decode"\nreplicas = 1', b'role = "decode"\nreplicas = "one"'
        ),
        "role unknown": DISAGG.replace(b'role = "decode"', b'role = "verify"'),
        "no decode pool": DISAGG[: DISAGG.rindex(b"[[pool]]")],
        "pool a table": DISAGG.replace(b"[[pool]]", b"[pool]", 1),
        "pool unknown key": DISAGG + b"bogus = 1\n",
        "handoff link": DISAGG.replace(b'"ib-400g"', b'"carrier-pigeon"'),
        "handoff table a number": DISAGG.replace(
            b'[handoff]\nlink = "ib-400g"\nmodel = "deepseek-v3"\n', b"handoff = 3\n"
        ),
        "prefix_hit 2": DISAGG.replace(b'role = "prefill"\n', b'role = "prefill"\nprefix_hit = 2.0\n'),
        "prefix_hit nan": DISAGG.replace(b'role = "prefill"\n', b'role = "prefill"\nprefix_hit = nan\n'),
        "deep": DISAGG + b"x = " + b"[" * 3000,
        "truncated": DISAGG[:120],
        "binary": b"\xff\x00" * 30,
    }
    out += [Case("disagg-gen", name, argv, {"d.toml": text}, ("d.toml",)) for name, text in bad.items()]
    files = {"d.toml": DISAGG, "afile": b"x\n"}
    flags = {
        "out under a file": ((*argv, "--out", "{W}/afile/o"), "afile"),
        "out a finished sweep": ((*argv, "--out", "{W}/done"), "done"),
        "out long name": ((*argv, "--out", "{W}/" + LONG), LONG[:16]),
        "backend slurm": ((*argv, "--backend", "slurm"), "--backend"),
        "json onto its config": ((*argv, "--json", "{W}/d.toml"), "d.toml"),
        "json under a file": ((*argv, "--json", "{W}/afile/x.json"), "afile"),
        "set unknown": ((*argv, "--set", "workload.bogus=1"), "workload.bogus"),
    }
    out += [Case("disagg-gen", name, a, files, (w,)) for name, (a, w) in flags.items()]
    return out


def vllm_cases() -> list[Case]:
    """`specbed vllm VERB`: the grouped vLLM verbs take their old commands' flags and checks."""
    files = {"afile": b"x\n", "scrape.txt": b"nothing to read\n"}
    curves = ("vllm", "curves", "{W}/scrape.txt", "--drafter", "d", "--domain", "chat")
    calibrate = ("vllm", "calibrate", "{W}/none.csv", "--workloads", "{W}/p.json", "--gpu", "h100")
    cases = {
        "unknown verb": (("vllm", "nope"), "nope"),
        "curves onto its scrape": ((*curves, "--out", "{W}/scrape.txt"), "scrape.txt"),
        "export no run": (("vllm", "export", "{W}/none"), "none"),
        "compare a bad result": (("vllm", "compare", "{W}/none", "{W}/scrape.txt"), "scrape.txt"),
        "validate json under a file": (("vllm", "validate", "{W}/s.csv", "--json", "{W}/afile/v"), "afile"),
        "calibrate no profiles": ((*calibrate, "--out", "{W}/k.json"), "p.json"),
    }
    return [Case("vllm", name, argv, files, (word,)) for name, (argv, word) in cases.items()]


BENCH_OK = {
    "input_lens": [10, 10],
    "output_lens": [4, 4],
    "ttfts": [0.01, 0.01],
    "itls": [[0.01] * 3] * 2,
    "request_rate": 1.0,
    "model_id": "Qwen/Qwen2.5-7B-Instruct",
}
KNOBS_BAD = {
    "null": b"null",
    "knobs-list": b'{"gpu": "h100", "knobs": [1]}',
    "gpu-number": b'{"gpu": 7, "knobs": {}}',
}


def validate_gen_cases() -> list[Case]:
    """`specbed validate` / `specbed cost calibrate`, generated: special files at each input, numbers and
    types in the bench JSON and the profiles, depth, outputs onto inputs or a sweep, long names, flags."""
    if "validate" not in KNOWN:
        return []
    from tests.fuzz import cases as C  # at call time: cases.py is loaded by then

    files = {
        "runs.csv": C._row(),
        "p.json": json.dumps(C._PROFILES).encode(),
        "afile": b"x\n",
        "b.json": json.dumps(BENCH_OK).encode(),
    }
    val = ("validate", "{W}/runs.csv", "--workloads", "{W}/p.json")
    cal = (
        "cost",
        "calibrate",
        "{W}/runs.csv",
        "--workloads",
        "{W}/p.json",
        "--gpu",
        "h100",
        "--out",
        "{W}/k.json",
    )
    slots = {
        "validate runs": (val, "runs.csv"),
        "validate workloads": (val, "p.json"),
        "validate bench": (("validate", "{W}/b.json"), "b.json"),
        "validate knobs": ((*val, "--knobs", "{W}/kn.json"), "kn.json"),
        "calibrate runs": (cal, "runs.csv"),
        "calibrate workloads": (cal, "p.json"),
    }
    out = []
    for slot, (argv, name) in slots.items():
        out += [
            Case("validate-gen", f"{slot} {k}", argv, {**files, name: m}, (name,)) for k, m in SPECIAL.items()
        ]
        out.append(Case("validate-gen", f"{slot} deep", argv, {**files, name: b"[" * 3000}, (name,)))
    return out + _validate_values(files, val) + _validate_flags(files, val, cal)


def _validate_values(files: dict, val: tuple) -> list[Case]:
    from tests.fuzz import cases as C
    from tests.fuzz.generated import LITERALS, TYPES, _at, _raw

    out = []
    bench = ("validate", "{W}/b.json")
    for leaf in (("input_lens", 0), ("ttfts", 1), ("request_rate",)):
        at = ".".join(map(str, leaf))
        for k, lit in LITERALS.items():
            if not (leaf == ("request_rate",) and k in ("d40", "i2^64", "e999", "2e308")):  # inf: all at once
                out.append(
                    Case(
                        "validate-gen",
                        f"bench {at}={k}",
                        bench,
                        {**files, "b.json": _raw(BENCH_OK, leaf, lit)},
                        ("b.json",),
                    )
                )
        for k, v in TYPES.items():
            if leaf == ("request_rate",) and v is None:
                continue  # vllm bench writes null for "all at once"
            out.append(
                Case(
                    "validate-gen",
                    f"bench {at}={k}",
                    bench,
                    {**files, "b.json": json.dumps(_at(BENCH_OK, leaf, v)).encode()},
                    ("b.json",),
                )
            )
    rate = ("workloads", "general", "stages", 0, "rate")
    for k, lit in LITERALS.items():
        out.append(
            Case(
                "validate-gen",
                f"profiles rate={k}",
                val,
                {**files, "p.json": _raw(C._PROFILES, rate, lit)},
                ("p.json",),
            )
        )
    for k, text in KNOBS_BAD.items():
        out.append(
            Case(
                "validate-gen",
                f"knobs {k}",
                (*val, "--knobs", "{W}/kn.json"),
                {**files, "kn.json": text},
                ("kn.json",),
            )
        )
    return out


def _validate_flags(files: dict, val: tuple, cal: tuple) -> list[Case]:
    bench = ("validate", "{W}/b.json")
    flags = {
        "calibrate --out onto runs": ((*cal[:-1], "{W}/runs.csv"), "runs.csv"),
        "calibrate --out onto profiles": ((*cal[:-1], "{W}/p.json"), "p.json"),
        "calibrate --out long": ((*cal[:-1], "{W}/" + LONG + ".json"), LONG[:16]),
        "calibrate --out under a file": ((*cal[:-1], "{W}/afile/k.json"), "afile"),
        "validate --json onto runs": ((*val, "--json", "{W}/runs.csv"), "runs.csv"),
        "validate --json onto profiles": ((*val, "--json", "{W}/p.json"), "p.json"),
        "validate --out a sweep": ((*val, "--out", "{W}/done"), "done"),
        "validate --out long": ((*val, "--out", "{W}/" + LONG), LONG[:16]),
        "validate --tp 0": ((*bench, "--tp", "0"), "--tp"),
        "calibrate --scale 0": ((*cal, "--scale", "0"), "--scale"),
        "calibrate --scale 2": ((*cal, "--scale", "2"), "--scale"),
        "calibrate --scale nan": ((*cal, "--scale", "nan"), "--scale"),
    }
    return [Case("validate-gen", n, a, files, (w,)) for n, (a, w) in flags.items()]
