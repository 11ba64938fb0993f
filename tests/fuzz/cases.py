"""The catalogue of bad inputs the CLI fuzz suite drives through `specbed.cli.main`.

Each `Case` is one distinct bad input: an argv (with `{W}` standing for the workspace folder), the files
it needs in the workspace (name -> bytes; a name ending in "/" is a folder), and the words the one stderr
line must contain (the file, the field or the flag it blames). The catalogue is deterministic, so
`python -m tests.fuzz` can count it without running anything; the hypothesis tests in test_cli_fuzz.py
add generated inputs on top.
"""

from __future__ import annotations

import json

from tests.fuzz import generated, newcmds, outputs_flags
from tests.fuzz.advise_cases import advise_cases
from tests.fuzz.base import GOOD_CSV, GOOD_TOML, GOOD_TRACE, OUT, SWEEP, Case
from tests.fuzz.flags import flag_cases
from tests.fuzz.spec_cases import spec_dataset_cases

_OUT = OUT


# -- config keys (every key of the simulator's schema, by type) --------------------------------------------

_INT_BAD = ("abc", "1.5", "nan", "1e30", "", "-1e30", "1e400", "0x10")
_FLOAT_BAD = ("abc", "nan", "inf", "-inf", "1e30", "-1e30", "")
_CHOICE_BAD = ("nope", "", "NONE_OF_THESE\x00")
_BOOL_BAD = ("maybe", "2", "")
_MIX_BAD = ("a,b,c", "1,1", "-1,1,1", "0,0,0", "nan,1,1", "1e30,1,1", "chat=1,bogus=2", "")
#: str keys that name files: bad values need the key to be used (trace only with kind=trace)
_PATH_BAD = {
    "cost.table": ("nope", "", "{W}/missing.csv", "{W}/adir/"),
    "cost.policy_table": ("nope", "", "{W}/missing.csv", "{W}/adir/"),
    "drafter.curves": ("", "{W}/missing.json", "{W}/adir/"),
    "workload.trace": ("", "nope-not-a-trace", "{W}/missing.csv", "{W}/adir/"),
}
_RUN = ("run", "--quiet", "--set", "workload.num_requests=20")


def _schema() -> dict[str, object]:
    from analysis.model import SimModel

    return SimModel().schema()


def config_cases() -> list[Case]:
    import typing

    from sim.deploy.keys import COST_NAME

    cases = []
    for key, tp in _schema().items():
        if key.startswith("server.") and key.removeprefix("server.") in COST_NAME:
            continue  # the old spelling of a [cost] key (it warns): its cases are the cost.* key's
        args = typing.get_args(tp)
        inner = next((a for a in args if a is not type(None)), tp) if args else tp
        if key in _PATH_BAD:
            extra = ("--set", "workload.kind=trace") if key == "workload.trace" else ()
            bad = _PATH_BAD[key]
        elif key == "workload.mix":
            extra, bad = (), _MIX_BAD
        elif inner is bool:
            extra, bad = (), _BOOL_BAD
        elif inner is int:
            extra, bad = (), _INT_BAD
        elif inner is float:
            extra, bad = (), _FLOAT_BAD
        else:
            extra, bad = (), _CHOICE_BAD
        for value in bad:
            cases.append(
                Case(
                    "config-set",
                    f"{key}={value!r}",
                    (*_RUN, *extra, "--set", f"{key}={value}"),
                    files={"adir/": b""},
                    expect=(key,),
                )
            )
    # a drafter priced from its own shape needs a vLLM deployment (cost.model) to price it against
    vllm = ("--set", "cost.model=llama3.1-8b")
    for argv in (("--set", "drafter.model=eagle3"), (*vllm, "--set", "drafter.model=eagle9")):
        name = f"drafter.model {' '.join(argv)!r}"
        cases.append(Case("config-set", name, (*_RUN, *argv), expect=("drafter.model",)))
    engine = (*vllm, "--set", "drafter.model=eagle3", "--set", "drafter.engine=tgi-1.0")
    cases.append(Case("config-set", "drafter.engine unknown", (*_RUN, *engine), expect=("drafter.engine",)))
    # a draft tree (drafter.topk > 1) needs a tree policy, and a stale one a delay ≥ 1 (docs/trees.md)
    tree = ("--set", "drafter.topk=3")
    cases.append(Case("config-set", "tree with a chain policy", (*_RUN, *tree), expect=("policy.name",)))
    stale0 = (*tree, "--set", "policy.name=dspark_tree_global", "--set", "policy.delay=0")
    cases.append(Case("config-set", "tree stale delay 0", (*_RUN, *stale0), expect=("policy.delay",)))
    # a trace's hash_ids block must be whole 16-token prefix-cache blocks
    for value in ("500", "8", "0"):
        argv = (*_RUN, "--set", f"workload.hash_block_tokens={value}")
        expect = ("workload.hash_block_tokens",)
        cases.append(Case("config-set", f"hash_block_tokens={value}", argv, expect=expect))
    # malformed --set items
    for item in ("nokey", "=3", "workload.=3", "bogus.key=1", "workload.bogus=1", ".=", "seed"):
        cases.append(Case("config-set", f"item {item!r}", (*_RUN, "--set", item), expect=("--set",)))
    return cases


# -- config files ----------------------------------------------------------------------------------------


def config_file_cases() -> list[Case]:
    bad = {
        "truncated": GOOD_TOML[:30],
        "binary": b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe" * 8,
        "nul": GOOD_TOML.replace(b"seed = 1", b"seed = \x001"),
        "latin1": GOOD_TOML + b"# caf\xe9\n",
        "unknown-section": GOOD_TOML + b"[bogus]\nx = 1\n",
        "unknown-key": GOOD_TOML.replace(b"concurrency = 4", b"concurrenccy = 4"),
        "wrong-type": GOOD_TOML.replace(b"concurrency = 4", b'concurrency = "four"'),
        "huge-int": GOOD_TOML.replace(b"num_requests = 20", b"num_requests = 9223372036854775807"),
        "huge-float": GOOD_TOML.replace(b"concurrency = 4", b"think_s = 1e308"),
        "nan": GOOD_TOML.replace(b"concurrency = 4", b"rate = nan"),
        "empty-cost": GOOD_TOML.replace(b'table = "h200-v4flash"', b'table = ""'),
        "empty-curves": GOOD_TOML + b'[drafter]\ncurves = ""\n',
        "section-as-key": b"workload = 3\n",
        "duplicate-key": GOOD_TOML + b"seed = 2\n",
        "bool-for-int": GOOD_TOML.replace(b"concurrency = 4", b"concurrency = true"),
        "array-for-int": GOOD_TOML.replace(b"concurrency = 4", b"concurrency = [4]"),
        "table-for-str": GOOD_TOML.replace(b'table = "h200-v4flash"', b"table = {a = 1}"),
        "negative": GOOD_TOML.replace(b"concurrency = 4", b"concurrency = -4"),
        "unclosed-string": GOOD_TOML.replace(b'"closed"', b'"closed'),
        "unclosed-header": GOOD_TOML.replace(b"[cost]", b"[cost"),
        "policy-cost-missing": GOOD_TOML + b'policy_table = "nope.csv"\n',
        "date": GOOD_TOML.replace(b"seed = 1", b"seed = 1979-05-27"),
    }
    cases = [
        Case("config-file", name, ("run", "--quiet", "{W}/c.toml"), {"c.toml": data}, ("c.toml",))
        for name, data in bad.items()
    ]
    # a missing data file is named itself (with its key), not the config line that names it
    cases = [
        Case(c.category, c.name, c.argv, c.files, ("nope.csv", "cost.policy_table"))
        if "missing" in c.name
        else c
        for c in cases
    ]
    cases.append(Case("config-file", "missing", ("run", "--quiet", "{W}/none.toml"), expect=("none.toml",)))
    cases.append(Case("config-file", "directory", ("run", "--quiet", "{W}/adir"), {"adir/": b""}, ("adir",)))
    return cases


# -- cost tables (CSV) ------------------------------------------------------------------------------------


def cost_cases() -> list[Case]:
    bad = {
        "truncated-row": GOOD_CSV[:-6],
        "binary": b"\x00\x01\x02\xff\xfe\xfd" * 20,
        "utf16": GOOD_CSV.decode().encode("utf-16"),
        "nul": GOOD_CSV.replace(b"64,", b"6\x004,"),
        "huge-tokens": GOOD_CSV + b"1e30,0.5\n",
        "int64-tokens": GOOD_CSV + b"9223372036854775808,0.5\n",
        "negative-seconds": GOOD_CSV.replace(b"0.012", b"-0.012"),
        "zero-seconds": GOOD_CSV.replace(b"0.012", b"0"),
        "nan-seconds": GOOD_CSV.replace(b"0.012", b"nan"),
        "inf-seconds": GOOD_CSV.replace(b"0.012", b"inf"),
        "fraction-tokens": GOOD_CSV.replace(b"64,", b"64.5,"),
        "zero-tokens": GOOD_CSV.replace(b"\n1,", b"\n0,"),
        "unsorted": GOOD_CSV.replace(b"512,", b"32,"),
        "duplicate": GOOD_CSV.replace(b"512,", b"64,"),
        "header-only": b"tokens,seconds\n",
        "empty": b"",
        "no-header": b"1,0.01\n2,0.02\n",
        "wrong-header": b"batch,latency\n1,0.01\n",
        "extra-column": GOOD_CSV.replace(b"64,0.012", b"64,0.012,9"),
        "missing-column": GOOD_CSV.replace(b"64,0.012", b"64"),
        "text-seconds": GOOD_CSV.replace(b"0.012", b"fast"),
        "empty-cell": GOOD_CSV.replace(b"0.012", b""),
    }
    cases = []
    for name, data in bad.items():
        for key in ("cost.table", "cost.policy_table"):
            # --out a new folder: a run refused at start-up must not leave it behind
            argv = (*_RUN, "--set", "cost.layers=32", "--set", f"{key}={{W}}/t.csv", "--out", "{W}/new")
            cases.append(Case("cost-csv", f"{key} {name}", argv, {"t.csv": data}, ("t.csv",)))
    return cases


# -- curves files (JSON) ----------------------------------------------------------------------------------


def _curves_doc() -> dict:
    chat = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]
    return {"version": 1, "curves": {"dspark": {"chat": chat, "math": chat, "code": chat}}}


def curves_cases() -> list[Case]:
    good = json.dumps(_curves_doc()).encode()

    def doc(edit) -> bytes:
        d = _curves_doc()
        edit(d)
        return json.dumps(d).encode()

    bad = {
        "truncated": good[: len(good) // 2],
        "binary": b"\xff\xd8\xff\xe0" + b"\x00" * 40,
        "nul": good.replace(b"0.9", b"0.\x009"),
        "deep": b"[" * 100_000,
        "not-object": b"[1, 2, 3]",
        "empty": b"",
        "version-99": doc(lambda d: d.update(version=99)),
        "no-curves": doc(lambda d: d.pop("curves")),
        "bad-domain": doc(lambda d: d["curves"]["dspark"].update(poetry=[0.5])),
        "prob>1": doc(lambda d: d["curves"]["dspark"].update(chat=[1.5, 0.5])),
        "nan": good.replace(b"0.9", b"NaN"),
        "string-prob": doc(lambda d: d["curves"]["dspark"].update(chat=["high"])),
        "empty-curve": doc(lambda d: d["curves"]["dspark"].update(chat=[])),
        "huge": good.replace(b"0.9", b"1e400"),
    }
    return [
        Case("curves", name, (*_RUN, "--set", "drafter.curves={W}/k.json"), {"k.json": data}, ("k.json",))
        for name, data in bad.items()
    ]


# -- vLLM / SGLang acceptance formats (`specbed curves from-vllm`, `specbed compare`) ------------------------

_V1 = (
    "INFO [metrics.py:98] SpecDecoding metrics: Mean acceptance length: 2.93, Accepted: 3857 tokens, "
    "Drafted: 6000 tokens, Per-position acceptance rate: 0.834, 0.629, 0.466\n"
)
_V0 = (
    "INFO metrics.py:383] Speculative metrics: Draft acceptance rate: 0.463, System efficiency: 0.512, "
    "Number of speculative tokens: 4, Number of accepted tokens: {acc}, Number of draft tokens: {tok}, "
    "Number of emitted tokens: {emit}.\n"
)
_CONSOLE = (
    "---------------Speculative Decoding---------------\nAcceptance rate (%):  64.28\n"
    "Acceptance length:  2.93\nDrafts:  2000\nDraft tokens:  6000\nAccepted tokens:  {acc}\n"
    "Per-position acceptance (%):\n  Position 0:  83.40\n  Position 1:  62.90\n  Position 2:  46.55\n"
)
_OFFLINE = (
    "num_drafts: 1000\nnum_draft_tokens: 4000\nnum_accepted_tokens: {acc}\nmean acceptance length: 2.99\n"
    "acceptance at token 0: 0.78\nacceptance at token {i}: 0.57\n"
)


def _prom(per_pos_engines: int = 1, drafts: str = "2000") -> bytes:
    lines = [f'vllm:spec_decode_num_drafts_total{{engine="{e}"}} {drafts}' for e in range(2)]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{e}",position="0"}} 900'
        for e in range(per_pos_engines)
    ]
    return ("\n".join(lines) + "\n").encode()


def vllm_format_cases() -> list[Case]:
    """Bad inputs of every acceptance format: one line naming the file (and line) at fault, exit 2."""
    req = {"acceptance_histogram": [100, 150, 100, 350], "num_spec_tokens": 3, "num_spec_steps": 700}
    bad = {
        "prom one engine of two": ("p.txt", _prom(1), ("p.txt", "partial scrape")),
        "prom table not a number": (
            "t.md",
            _prom(2).replace(b" 2000", b" | lots |", 1),
            ("t.md:1", "not a number"),
        ),
        "v1 log rates cut": ("a.log", _V1.replace(", 0.629, 0.466", "").encode(), ("a.log:1", "Drafted")),
        "v1 log rates text": ("b.log", _V1.replace("0.629", "high").encode(), ("b.log:1", "Per-position")),
        "v0 log restart": (
            "c.log",
            (_V0.format(acc=3700, tok=8000, emit=5120) + _V0.format(acc=10, tok=40, emit=30)).encode(),
            ("c.log:2", "restart"),
        ),
        "v0 log emitted above K+1": (
            "d.log",
            _V0.format(acc=3700, tok=8000, emit=99999).encode(),
            ("d.log:1", "K disagrees"),
        ),
        "v0 log no tau-only": (
            "e.log",
            _V0.format(acc=3700, tok=8000, emit=5120).encode(),
            ("e.log:1", "--tau-only"),
        ),
        "sglang no tau-only": (
            "f.log",
            b"Decode batch. #running-req: 4, accept len: 3.10, accept rate: 0.70\n",
            ("f.log:1", "--tau-only"),
        ),
        "sglang not a number": (
            "g.log",
            b"Decode batch. #running-req: 4, accept len: 3.1.0\n",
            ("g.log:1", "accept len"),
        ),
        "console sum": ("h.txt", _CONSOLE.format(acc=5000).encode(), ("h.txt:", "accepted")),
        "console no drafts": (
            "i.txt",
            _CONSOLE.format(acc=3857).replace("Drafts:  2000\n", "").encode(),
            ("i.txt:", "drafts"),
        ),
        "offline gap": ("j.txt", _OFFLINE.format(acc=1350, i=3).encode(), ("j.txt:", "missing position 1")),
        "per-request K": (
            "k.json",
            json.dumps({"metrics": {"speculative_decoding": {**req, "num_spec_tokens": 5}}}).encode(),
            ("k.json", "K disagrees"),
        ),
        "per-request steps": (
            "l.jsonl",
            (json.dumps({"x": 1}) + "\n" + json.dumps({**req, "num_spec_steps": 3}) + "\n").encode(),
            ("l.jsonl:2", "num_spec_steps"),
        ),
        "per-request bad line": (
            "m.jsonl",
            (json.dumps(req) + "\n{oops\n").encode(),
            ("m.jsonl:2", "JSON"),
        ),
    }
    out = []
    for name, (file, data, expect) in bad.items():
        argv = (
            "curves",
            "from-vllm",
            "{W}/" + file,
            "--drafter",
            "d",
            "--domain",
            "chat",
            "--out",
            "{W}/k.out",
        )
        out.append(Case("vllm", name, argv, {file: data}, expect))
    for name, file, data in (
        ("compare console no rows", "n.txt", b"Successful requests: 3\n"),
        ("compare per-request no timing", "o.jsonl", json.dumps(req).encode() + b"\n"),
    ):
        out.append(
            Case(
                "vllm",
                name,
                ("compare", "{W}/brokenrun", "{W}/" + file),
                {file: data, "brokenrun/summary.json": b'{"throughput'},
                (file,),
            )
        )
    return out


# -- traces ------------------------------------------------------------------------------------------------


def trace_cases() -> list[Case]:
    bad = {
        "truncated": GOOD_TRACE[:45],
        "binary": b"\x1f\x8b\x08\x00garbage\xff" * 5,
        "nul": GOOD_TRACE.replace(b"200", b"2\x0000"),
        "huge-tokens": GOOD_TRACE.replace(b"200", b"1e30"),
        "negative-tokens": GOOD_TRACE.replace(b"200", b"-200"),
        "text-tokens": GOOD_TRACE.replace(b"200", b"many"),
        "nan-arrival": GOOD_TRACE.replace(b"0.5,", b"nan,"),
        "empty": b"",
        "header-only": GOOD_TRACE.splitlines(keepends=True)[0],
        "unknown-columns": b"a,b,c\n1,2,3\n",
    }
    cases = []
    for name, data in bad.items():
        cases.append(
            Case("trace", f"stats {name}", ("trace", "stats", "{W}/r.csv"), {"r.csv": data}, ("r.csv",))
        )
        argv = (*_RUN, "--set", "workload.kind=trace", "--set", "workload.trace={W}/r.csv")
        cases.append(Case("trace", f"run {name}", argv, {"r.csv": data}, ("r.csv",)))
    return cases


# -- sweep files ------------------------------------------------------------------------------------------


def sweep_cases() -> list[Case]:
    bad = {
        "truncated": SWEEP[:40],
        "binary": b"\x00\xff" * 30,
        "unknown-top": SWEEP + b"bogus = 1\n",
        "unknown-key": SWEEP + b'"workload.bogus" = [1]\n',
        "empty-axis": SWEEP + b"seed = []\n",
        "scalar-axis": SWEEP + b"seed = 3\n",
        "huge-value": SWEEP + b'"workload.num_requests" = [100000000000]\n',
        "bad-cost-name": SWEEP + b'"cost.table" = ["h200-v4flash", "nope"]\n',
        "bad-cost-file": SWEEP + b'"cost.table" = ["bad.csv"]\n"cost.layers" = [32]\n',
        "bad-curves-file": SWEEP + b'"drafter.curves" = ["bad.json"]\n',
        "bad-draft-cost-file": SWEEP + b'"drafter.cost" = ["bad.csv"]\n',
        "bad-policy-cost-file": SWEEP + b'"cost.policy_table" = ["bad.csv"]\n',
        "missing-base": b'base = "nope.toml"\n' + SWEEP[SWEEP.index(b"[axes]") :],
        "zip-lengths": SWEEP + b'[[zip]]\n"policy.name" = ["ar", "fixed"]\n"drafter.name" = ["none"]\n',
        "zip-same-configs": SWEEP + b'[[zip]]\nlabel = ["A", "B"]\n"policy.name" = ["dspark", "dspark"]\n',
        "zip-dup-labels": SWEEP + b'[[zip]]\nlabel = ["A", "A"]\n"seed" = [0, 1]\n',
        "swept-twice": SWEEP + b'[[zip]]\n"workload.concurrency" = [1, 2]\n',
        "bad-set": b'set = ["workload.num_requests"]\n' + SWEEP,
        "set-unknown": b'set = ["workload.bogus=1"]\n' + SWEEP,
        "analysis-slo": SWEEP + b"[analysis]\nslo = [-5]\n",
        "analysis-key": SWEEP + b"[analysis]\nbogus = 1\n",
        "type-in-axis": SWEEP + b'"workload.rate" = ["fast"]\n',
        "nan-in-axis": SWEEP + b'"workload.rate" = [nan]\n',
        "empty-cost": SWEEP + b'"cost.table" = [""]\n',
        "policy-param": SWEEP + b'"policy.k" = [3]\n',
    }
    files = {"bad.csv": b"tokens,seconds\n1,\xff\n", "bad.json": b"{not json"}
    cases = [
        Case("sweep-file", name, ("sweep", "{W}/s.toml", *_OUT), {"s.toml": data, **files}, ("s.toml",))
        for name, data in bad.items()
    ]
    # these name the data file, not the sweep line
    for name in ("bad-cost-file", "bad-curves-file", "bad-draft-cost-file", "bad-policy-cost-file"):
        i = next(i for i, c in enumerate(cases) if c.name == name)
        c = cases[i]
        cases[i] = Case(c.category, c.name, c.argv, c.files, ("bad.csv" if "cost" in name else "bad.json",))
    cases.append(Case("sweep-file", "missing", ("sweep", "{W}/none.toml", *_OUT), expect=("none.toml",)))
    cases.append(Case("sweep-file", "directory", ("sweep", "{W}/adir", *_OUT), {"adir/": b""}, ("adir",)))
    return cases


# -- search: spaces, SLO strings, price tables, traffic files (`specbed search`) ---------------------------

SPACE = b"""name = "fz"
[axes]
"cost.table" = ["h200-dense8b"]
"server.replicas" = [1, 2]
"""
PRICES = b"""[gpu.h200]
usd_per_hour = 3.5
source = "test"
date = "2026-01-01"
"""
TRAFFIC = b"""[workload]
kind = "poisson"
rate = 2.0
num_requests = 50
"""
_SEARCH = ("search", "{W}/space.toml", "--out", "{W}/so", "--quiet")
_SLO = ("--slo", "ttft_p90<=2s")


def _search_case(name: str, argv: tuple[str, ...], files: dict[str, bytes], expect: tuple[str, ...]) -> Case:
    base = {"space.toml": SPACE, "traffic.toml": TRAFFIC, "prices.toml": PRICES}
    return Case("search", name, argv, {**base, **files}, expect)


def search_cases() -> list[Case]:
    run = (*_SEARCH, "--traffic", "{W}/traffic.toml")
    spaces = {
        "space-unknown-top": SPACE + b"bogus = 1\n",
        "space-unknown-key": SPACE + b'"server.bogus" = [1]\n',
        "space-empty-axis": SPACE + b'"server.max_num_seqs" = []\n',
        "space-bad-value": SPACE + b'"server.max_num_seqs" = [-4]\n',
        "space-search-key": SPACE + b"[search]\nbogus = 1\n",
        "space-objective": SPACE + b'[search]\nobjective = "speed"\n',
        "space-rungs": SPACE + b"[search]\nrungs = [0.5, 0.2]\n",
        "space-rungs-last": SPACE + b"[search]\nrungs = [0.1, 0.5]\n",
        "space-eta": SPACE + b"[search]\neta = 0\n",
        "space-keep": SPACE + b"[search]\nkeep = 1.5\n",
        "space-gpus": SPACE + b"[search]\ngpus = 3\n",
        "space-truncated": SPACE[:20],
        "space-binary": b"\x00\xff" * 20,
        "space-unpriced-csv": SPACE.replace(b'"h200-dense8b"', b'"c.csv"') + b'"cost.layers" = [32]\n',
    }
    cases = [_search_case(n, (*run, *_SLO), {"space.toml": d, "c.csv": b"tokens,seconds\n1,0.01\n"},
                          ("space.toml",)) for n, d in spaces.items()]  # fmt: skip
    slos = {
        "slo-empty": "",
        "slo-metric": "ttft_p95<=2s",
        "slo-unit": "ttft_p90<=2h",
        "slo-op": "ttft_p90>=2s",
        "slo-number": "ttft_p90<=abc",
        "slo-negative": "itl_p50<=-1ms",
        "slo-nan": "itl_p50<=nan",
        "slo-dup": "itl_p50<=1s,itl_p50<=2s",
        "slo-attainment": "attainment>=2",
        "slo-garbage": "\x00,,",
    }
    for name, slo in slos.items():
        cases.append(_search_case(name, (*run, "--slo", slo), {}, ("--slo",)))
    prices = {
        "prices-truncated": PRICES[:15],
        "prices-no-source": PRICES.replace(b'source = "test"\n', b""),
        "prices-zero": PRICES.replace(b"3.5", b"0"),
        "prices-string": PRICES.replace(b"3.5", b'"cheap"'),
        "prices-unknown": PRICES + b"bogus = 1\n",
        "prices-empty": b"",
        "prices-missing-gpu": PRICES.replace(b"h200", b"h100"),
    }
    for name, data in prices.items():
        argv = (*run, *_SLO, "--prices", "{W}/p.toml")
        cases.append(_search_case(name, argv, {"p.toml": data}, ("p.toml",)))
    traffic = {
        "traffic-no-workload": b"seed = 1\n",
        "traffic-bad-key": TRAFFIC + b"bogus = 1\n",
        "traffic-bad-rate": TRAFFIC.replace(b"2.0", b"-2.0"),
        "traffic-truncated": TRAFFIC[:12],
    }
    for name, data in traffic.items():
        argv = (*_SEARCH, "--traffic", "{W}/t.toml", *_SLO)
        cases.append(_search_case(name, argv, {"t.toml": data}, ("t.toml",)))
    pooled = {"space.toml": b'base = "d.toml"\n[axes]\n"pool.decode.replicas" = [0, 1]\n',
              "d.toml": GOOD_TOML + b'[[pool]]\nrole = "prefill"\n[[pool]]\nrole = "decode"\n'}  # fmt: skip
    expect = ("space.toml", "pool.decode.replicas")
    cases.append(_search_case("space-bad-pool-axis", (*run, *_SLO), pooled, expect))
    trace = (*_SEARCH, "--traffic", "{W}/t.csv", *_SLO)
    cases.append(_search_case("traffic-bad-trace", trace, {"t.csv": b"a,b\n\xff,1\n"}, ("t.csv",)))
    cases.append(
        _search_case("traffic-missing", (*_SEARCH, "--traffic", "nope-trace", *_SLO), {}, ("nope-trace",))
    )
    for name, extra, word in (("jobs", ("--jobs", "0"), "--jobs"),
                              ("budget", ("--budget-s", "-1"), "--budget-s"),
                              ("backend", ("--backend", "slurm"), "--backend"),
                              ("speedup", ("--speedup", "0"), "--speedup"),
                              ("resume-force", ("--resume", "--force"), "--force")):  # fmt: skip
        cases.append(_search_case(f"flag-{name}", (*run, *_SLO, *extra), {}, (word,)))
    return cases


# -- flags of every command -------------------------------------------------------------------------------


# -- outputs ----------------------------------------------------------------------------------------------


def output_cases() -> list[Case]:
    under_file = "{W}/afile/sub"
    cmds = {
        "run": (*_RUN, "--out", under_file),
        "sweep": ("sweep", "{W}/s.toml", "--out", under_file),
        "pareto": ("pareto", "{W}/done", "--out", under_file + ".png"),
        "report": ("report", "{W}/done", "--out", under_file + ".md"),
        "trace synth": ("trace", "synth", "azure2023-code", "--n", "5", "--out", under_file + ".csv"),
        "trace convert": ("trace", "convert", "azure2023-code", "--out", under_file + ".csv"),
        "engine profile": ("engine", "profile", "--out", under_file + ".csv"),
        "engine curves": ("engine", "curves", "--out", under_file + ".json"),
        "engine eval": ("engine", "eval", "--out", under_file),
        "fidelity": ("fidelity", "--out", under_file),
        "demo": ("demo", "--out", under_file),
    }
    cases = []
    files = {"afile": b"keep me\n", "s.toml": SWEEP, "adir/": b""}
    for name, argv in cmds.items():
        slow = name.startswith(("engine", "fidelity"))
        cases.append(Case("output", f"{name} under a file", argv, files, ("afile",), slow))
    dir_as_file = {
        "pareto": ("pareto", "{W}/done", "--out", "{W}/adir"),
        "pareto trailing slash": ("pareto", "{W}/done", "--out", "{W}/newdir/"),
        "report": ("report", "{W}/done", "--out", "{W}/adir"),
        "report named pareto.png": ("report", "{W}/done", "--out", "{W}/pareto.png"),
        "trace synth": ("trace", "synth", "azure2023-code", "--n", "5", "--out", "{W}/adir"),
        "engine profile": ("engine", "profile", "--out", "{W}/adir"),
        "engine curves": ("engine", "curves", "--out", "{W}/adir"),
        "run onto a file": (*_RUN, "--out", "{W}/afile"),
        "sweep onto a file": ("sweep", "{W}/s.toml", "--out", "{W}/afile"),
        "sweep onto a foreign folder": ("sweep", "{W}/s.toml", "--out", "{W}/foreign"),
        "sweep onto a finished sweep": ("sweep", "{W}/s.toml", "--out", "{W}/done"),
    }
    files2 = {**files, "foreign/notes.txt": b"mine\n"}
    for name, argv in dir_as_file.items():
        slow = name.startswith("engine")
        cases.append(Case("output", f"{name} (a folder or file in the way)", argv, files2, (), slow))
    results = {
        "pareto no sweep": ("pareto", "{W}/foreign"),
        "pareto missing": ("pareto", "{W}/nothing"),
        "pareto a file": ("pareto", "{W}/afile"),
        "report no sweep": ("report", "{W}/foreign"),
        "report missing": ("report", "{W}/nothing"),
        "report broken manifest": ("report", "{W}/broken"),
        "pareto empty sweep": ("pareto", "{W}/empty"),
    }
    files3 = {
        **files2,
        "broken/sweep.json": b'{"fingerprint": ',
        "empty/sweep.json": b'{"fingerprint": "x", "cells": []}',
    }
    for name, argv in results.items():
        cases.append(Case("results-dir", name, argv, files3, ()))
    return cases


_RUNS_HEADER = (
    "exp_id,folder,model,hardware,tp,dp,workload,max_num_batched_tokens,cpu_offload,gpu_mem_util,precision,"
    "actual_e2e_mean,actual_e2e_p90,actual_e2e_p99,actual_ttft_mean,actual_ttft_p90,actual_ttft_p99,"
    "actual_itl_mean\n"
)
_RUN_ROW = "1,1-x,Qwen/Qwen2.5-7B-Instruct,H100,{tp},,general,{mnbt},,{util},FP16,{e2e},1,1,1,1,1,1\n"
_PROFILES = {"workloads": {"general": {"stages": [{"rate": 1.0, "duration": 2}], "load_type": "constant",
             "data": {"type": "shared_prefix", "shared_prefix": {"num_unique_system_prompts": 1,
             "num_users_per_system_prompt": 1, "system_prompt_len": 10, "question_len": 10,
             "output_len": 4}}}}}  # fmt: skip


def _row(**kw) -> bytes:
    cells = {"tp": "1", "mnbt": "256", "util": "", "e2e": "10", **kw}
    return (_RUNS_HEADER + _RUN_ROW.format(**cells)).encode()


def validate_cases() -> list[Case]:
    """`specbed validate` / `specbed cost calibrate`: bad RUNS.csv, PROFILES.json, bench JSON, knobs."""
    good = json.dumps(_PROFILES).encode()
    bad_rate = json.loads(json.dumps(_PROFILES))
    bad_rate["workloads"]["general"]["stages"][0]["rate"] = -1
    no_len = json.loads(json.dumps(_PROFILES))
    del no_len["workloads"]["general"]["data"]["shared_prefix"]["question_len"]
    runs = {
        "tp not a number": (_row(tp="two"), ("runs.csv:2", "tp")),
        "tp zero": (_row(tp="0"), ("runs.csv", "tp")),
        "mnbt float": (_row(mnbt="1.5"), ("runs.csv", "max_num_batched_tokens")),
        "util above 1": (_row(util="1.5"), ("runs.csv", "gpu_mem_util")),
        "actual nan": (_row(e2e="nan"), ("runs.csv", "actual_e2e_mean")),
        "actual empty": (_row(e2e=""), ("runs.csv", "actual_e2e_mean")),
        "missing column": (b"exp_id,model\n1,x\n", ("runs.csv", "hardware")),
        "header only": (_RUNS_HEADER.encode(), ("runs.csv", "no rows")),
    }
    cases = []
    for name, (body, expect) in runs.items():
        files = {"runs.csv": body, "p.json": good}
        argv = ("validate", "{W}/runs.csv", "--workloads", "{W}/p.json")
        cases.append(Case("validate", f"runs {name}", argv, files, expect))
        cal = ("cost", "calibrate", "{W}/runs.csv", "--workloads", "{W}/p.json", "--gpu", "h100", "--out",
               "{W}/k.json")  # fmt: skip
        cases.append(Case("calibrate", f"runs {name}", cal, files, expect))
    profiles = {
        "not json": (b"{", ("p.json", "JSON")),
        "no workloads": (b"{}", ("p.json", "workloads")),
        "negative rate": (json.dumps(bad_rate).encode(), ("p.json", "workloads.general.stages[0].rate")),
        "no question_len": (json.dumps(no_len).encode(), ("p.json", "question_len")),
    }
    for name, (body, expect) in profiles.items():
        files = {"runs.csv": _row(), "p.json": body}
        argv = ("validate", "{W}/runs.csv", "--workloads", "{W}/p.json")
        cases.append(Case("validate", f"profiles {name}", argv, files, expect))
    bench = {"input_lens": [10, 10], "output_lens": [4, 4], "ttfts": [0.01], "itls": [[0.01] * 3] * 2,
             "request_rate": 1.0, "model_id": "Qwen/Qwen2.5-7B-Instruct"}  # fmt: skip
    rate = {**bench, "ttfts": [0.01, 0.01], "request_rate": -2}
    extra = {
        "bench ttfts too short": ({"b.json": json.dumps(bench).encode()}, ("validate", "{W}/b.json"),
                                  ("b.json", "ttfts")),
        "bench bad rate": ({"b.json": json.dumps(rate).encode()}, ("validate", "{W}/b.json"),
                           ("b.json", "request_rate")),
        "bench unknown model": ({"b.json": json.dumps({**bench, "model_id": "acme/x"}).encode()},
                                ("validate", "{W}/b.json"), ("b.json", "model_id")),
        "no workloads flag": ({"runs.csv": _row()}, ("validate", "{W}/runs.csv"), ("--workloads",)),
        "knobs bad eta": ({"runs.csv": _row(), "p.json": good,
                           "k.json": b'{"gpu": "h100", "knobs": {"eta_bw": 2}}'},
                          ("validate", "{W}/runs.csv", "--workloads", "{W}/p.json", "--knobs", "{W}/k.json"),
                          ("k.json", "eta_bw")),
        "calibrate unknown gpu": ({"runs.csv": _row(), "p.json": good},
                                  ("cost", "calibrate", "{W}/runs.csv", "--workloads", "{W}/p.json", "--gpu",
                                   "tpu9", "--out", "{W}/k.json"), ("--gpu",)),
    }  # fmt: skip
    for name, (files, argv, expect) in extra.items():
        cases.append(Case("validate", name, argv, files, expect))
    return cases


DISAGG_TOML = b"""[workload]
num_requests = 20
[[pool]]
role = "prefill"
[[pool]]
role = "decode"
"""


def disagg_cases() -> list[Case]:
    """`specbed disagg`: bad pool tables, hand-off keys and --set items (sim.disagg.config)."""
    files = {"d.toml": DISAGG_TOML}
    bad_sets = {
        "pool replicas 0": ("pool.decode.replicas=0", "pool.decode.replicas"),
        "pool replicas text": ("pool.prefill.replicas=abc", "pool.prefill.replicas"),
        "pool replicas huge": ("pool.decode.replicas=1e30", "pool.decode.replicas"),
        "pool unknown role": ("pool.middle.replicas=1", "pool.middle.replicas"),
        "pool unknown key": ("pool.decode.bogus=1", "pool.decode.bogus"),
        "pool prefix_hit 1": ("pool.prefill.prefix_hit=1", "pool.prefill.prefix_hit"),
        "pool prefix_hit nan": ("pool.prefill.prefix_hit=nan", "pool.prefill.prefix_hit"),
        "pool ep without ranks": ("pool.decode.ep_gpus=8", "pool.decode.attention_ranks"),
        "pool budget": ("pool.decode.budget=everyone", "pool.decode.budget"),
        "pool seqs over its budget": ("pool.decode.max_num_seqs=10000", "pool.decode.max_num_batched_tokens"),
        "handoff link": ("handoff.link=pigeon", "handoff.link"),
        "handoff bandwidth 0": ("handoff.bandwidth=0", "handoff.bandwidth"),
        "handoff latency inf": ("handoff.latency=inf", "handoff.latency"),
        "handoff draft_kv": ("handoff.draft_kv=both", "handoff.draft_kv"),
        "handoff model": ("handoff.model=gpt-9", "handoff.model"),
        "handoff unknown key": ("handoff.colour=red", "handoff.colour"),
        "handoff contention": ("handoff.contention=maybe", "handoff.contention"),
        "pool prefix_share": ("pool.prefill.prefix_share=2", "pool.prefill.prefix_share"),
        "pool cache_routing": ("pool.prefill.cache_routing=nearest", "pool.prefill.cache_routing"),
        "pool prefix_cache on decode": ("pool.decode.prefix_cache=true", "pool.decode.prefix_cache"),
        "pool draft_prefix_cached": ("pool.prefill.draft_prefix_cached=2", "draft_prefix_cached"),
    }
    cases = [
        Case("disagg", name, ("disagg", "{W}/d.toml", "--set", item), files, (fieldname,))
        for name, (item, fieldname) in bad_sets.items()
    ]
    bad_files = {
        "no decode pool": (b'[[pool]]\nrole = "prefill"\n', "pool.role"),
        "two prefill pools": (b'[[pool]]\nrole = "prefill"\n[[pool]]\nrole = "prefill"\n', "pool.role"),
        "pool not an array": (b'[pool]\nrole = "prefill"\n', "pool"),
        "handoff not a table": (b'handoff = 3\n[[pool]]\nrole = "prefill"\n[[pool]]\nrole = "decode"\n',
                                "handoff"),
        "pool negative replicas": (DISAGG_TOML.replace(b'"decode"', b'"decode"\nreplicas = -2'),
                                   "pool.decode.replicas"),
        "closed loop": (DISAGG_TOML.replace(b"num_requests = 20", b'kind = "closed"'), "workload.kind"),
    }  # fmt: skip
    for name, (data, fieldname) in bad_files.items():
        cases.append(Case("disagg", name, ("disagg", "{W}/c.toml"), {"c.toml": data}, ("c.toml", fieldname)))
    cases.append(Case("disagg", "missing config", ("disagg", "{W}/none.toml"), expect=("none.toml",)))
    both = b'[workload]\nnum_requests = 20\n[[pool]]\nrole = "both"\n'
    fleets = {  # `specbed run` with [[pool]] tables: a fleet of one `both` pool, or of two
        "both beside a prefill pool": (both + b'[[pool]]\nrole = "prefill"\n', "pool.role"),
        "both with a handoff": (both + b'[handoff]\nlink = "ib-400g"\n', "pool.role"),
        "both with prefix_hit": (both + b"prefix_hit = 0.5\n", "pool.both.prefix_hit"),
        "both with ep_gpus": (both + b"ep_gpus = 8\nattention_ranks = 8\n", "pool.both.ep_gpus"),
        "both replicas 0": (both + b"replicas = 0\n", "pool.both.replicas"),
        "two pools: decode missing": (b'[[pool]]\nrole = "prefill"\n', "pool.role"),
    }
    for name, (data, fieldname) in fleets.items():
        argv = ("run", "{W}/c.toml")
        cases.append(Case("run", f"fleet {name}", argv, {"c.toml": data}, ("c.toml", fieldname)))
    return cases


# -- issue 36 items 2 + 3: inputs whose meaning is wrong (each one a traceback or a silent run before) ------

_V1_MEAN = (
    "INFO [metrics.py:98] SpecDecoding metrics: Mean acceptance length: 2.06, Accepted: {acc} tokens, "
    "Drafted: 7566 tokens, Per-position acceptance rate: 0.531, 0.322, 0.204, "
    "Avg Draft acceptance rate: 35.2%\n"
)
_WL_IDLE = {
    "workloads": {
        "chat-small": {
            "stages": [{"rate": 0.1, "duration": 5}],
            "data": {"type": "shared_prefix", "shared_prefix": {
                "num_unique_system_prompts": 4, "num_users_per_system_prompt": 4,
                "system_prompt_len": 256, "question_len": 256, "output_len": 128}},
        }
    }
}  # fmt: skip


def meaning_cases() -> list[Case]:
    curves = ("vllm", "curves", "--drafter", "d", "--domain", "chat", "--out", "{W}/c.json")
    sgl_idle = b"Decode batch. #running-req: 0, #token: 0, accept len: 2.10\n" * 2
    runs = (
        b"exp_id,folder,model,hardware,tp,dp,workload,max_num_batched_tokens,cpu_offload,gpu_mem_util,"
        b"precision,actual_e2e_mean,actual_e2e_p90,actual_e2e_p99,actual_ttft_mean,actual_ttft_p90,"
        b"actual_ttft_p99,actual_itl_mean\n1,f,meta-llama/Llama-3.1-8B-Instruct,H100,1,,chat-small,2048,,,"
        b"FP16,899.9,923.4,946.6,25.5,28.5,34.1,6.99\n"
    )
    dep = b'[workload]\nnum_requests = 20\n[cost]\nmodel = "%s"\ngpu = "h200"\n%s\n[server]\ntp = %d\n'
    deployments = {  # what vLLM refuses to start: heads not split evenly over the GPUs, no room for a request
        "70B at tp 9": (dep % (b"llama3.1-70b", b"", 9), "server.tp"),
        "8B at tp 3": (dep % (b"llama3.1-8b", b"", 3), "server.tp"),
        "8B at tp 4096": (dep % (b"llama3.1-8b", b"", 4096), "server.tp"),
        "max_model_len 1": (dep % (b"llama3.1-8b", b"max_model_len = 1", 1), "cost.max_model_len"),
    }
    two = b'[workload]\nnum_requests = 20\n[[pool]]\nrole = "prefill"\n%s\n[[pool]]\nrole = "decode"\n%s\n'
    deployments |= {
        "pool with no role": (b'[[pool]]\nreplicas = 1\n[[pool]]\nrole = "decode"\n', "pool.role"),
        "pool replicas 2.0": (two % (b"replicas = 2.0", b""), "pool.prefill.replicas"),
        "handoff at 1e-12 B/s": (two % (b"", b"[handoff]\nbandwidth = 1e-12"), "handoff.bandwidth"),
        "num_requests 20.0": (b"[workload]\nnum_requests = 20.0\n", "workload.num_requests"),
        "drafter.engine without drafter.model": (
            b'[workload]\nnum_requests = 20\n[drafter]\nname = "eagle3"\nengine = "sglang"\n',
            "drafter.engine",
        ),
    }
    cases = [
        Case("meaning", f"deploy {name}", ("run", "--quiet", "{W}/c.toml"), {"c.toml": d}, ("c.toml", key))
        for name, (d, key) in deployments.items()
    ]
    cases += [
        Case("meaning", f"--set int as {v}", ("run", "--quiet", "--set", f"workload.num_requests={v}"),
             expect=("workload.num_requests",))
        for v in ("20.0", "2e1")
    ]  # fmt: skip
    return cases + [
        Case("meaning", "sglang log, every interval idle (--tau-only)", (*curves, "--tau-only", "{W}/s.log"),
             {"s.log": sgl_idle}, ("s.log", "accept len")),
        Case("meaning", "v1 log with Accepted above Drafted", (*curves, "{W}/v.log"),
             {"v.log": _V1_MEAN.format(acc=9000).encode()}, ("v.log", "Accepted")),
        Case("meaning", "inference-perf stage sending no request",
             ("vllm", "validate", "{W}/runs.csv", "--workloads", "{W}/wl.json"),
             {"runs.csv": runs, "wl.json": json.dumps(_WL_IDLE).encode()}, ("wl.json", "stages[0]")),
    ]  # fmt: skip


def all_cases() -> list[Case]:
    cases = [
        *validate_cases(),
        *spec_dataset_cases(),
        *advise_cases(),
        *disagg_cases(),
        *config_cases(),
        *config_file_cases(),
        *cost_cases(),
        *curves_cases(),
        *vllm_format_cases(),
        *trace_cases(),
        *sweep_cases(),
        *search_cases(),
        *flag_cases(),
        *output_cases(),
        *generated.special_cases(),
        *generated.number_cases(),
        *outputs_flags.output_cases(),
        *outputs_flags.flag_cases(),
        *outputs_flags.nonsense_cases(),
        *newcmds.search_cases(),
        *newcmds.disagg_cases(),
        *newcmds.validate_gen_cases(),
        *newcmds.vllm_cases(),
        *meaning_cases(),
        *meaning_check_cases(),
    ]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases


# -- issue 36 item 3, round three: meaning checks (specsched.io.meaning, traces' hash_ids, deployments) ------

_MEAN_ROW = (
    "1,1-q,Qwen/Qwen2.5-7B-Instruct,H100,1,,general,256,,,{prec},{e2e},{e2e90},{e2e99},{ttft},25,30,{itl}\n"
)
_MEAN_CELLS = {"prec": "FP16", "e2e": "200", "e2e90": "210", "e2e99": "220", "ttft": "20", "itl": "12"}
#: the fuzz profile of `_PROFILES`, 4 output tokens: a row of 200 ms e2e, 20 ms TTFT, 12 ms ITL is plausible
_MEAN_PROFILES = {"workloads": {"general": {**_PROFILES["workloads"]["general"],
                  "data": {"type": "shared_prefix", "shared_prefix": {
                      "num_unique_system_prompts": 1, "num_users_per_system_prompt": 1,
                      "system_prompt_len": 10, "question_len": 10, "output_len": 16}}}}}  # fmt: skip


def _mean_row(**kw) -> bytes:
    return (_RUNS_HEADER + _MEAN_ROW.format(**{**_MEAN_CELLS, **kw})).encode()


def _mean_bench(**kw) -> bytes:
    doc = {"model_id": "Qwen/Qwen2.5-7B-Instruct", "completed": 2, "duration": 2.0, "request_rate": 1.0,
           "input_lens": [10, 10], "output_lens": [4, 4], "ttfts": [0.02, 0.02], "itls": [[0.01] * 3] * 2,
           "total_input_tokens": 20, "total_output_tokens": 8, "request_throughput": 1.0,
           "output_throughput": 4.0, "mean_ttft_ms": 20.0, "median_ttft_ms": 20.0, "p99_ttft_ms": 20.0,
           "mean_itl_ms": 10.0, "median_itl_ms": 10.0, "p99_itl_ms": 10.0, "mean_e2el_ms": 50.0,
           "median_e2el_ms": 50.0, "p99_e2el_ms": 50.0}  # fmt: skip
    return json.dumps({**doc, **kw}).encode()


def meaning_check_cases() -> list[Case]:
    """Files that parse but cannot be what they say: a column in seconds, a p99 under its p90, a TTFT after
    the last token, rates a run's own counts contradict, a named column that is missing, a cell edited to
    inf, a deployment vLLM would not start."""
    val = ("vllm", "validate", "{W}/runs.csv", "--workloads", "{W}/p.json")
    prof = json.dumps(_MEAN_PROFILES).encode()
    fast = json.loads(prof)
    fast["workloads"]["general"]["stages"][0]["rate"] = 5000.0
    rows = {
        "e2e in seconds": (_mean_row(e2e="0.2", e2e90="0.21", e2e99="0.22", ttft="0.02"), "actual_e2e_mean"),
        "itl in seconds": (_mean_row(itl="0.012"), "actual_itl_mean"),
        "p99 below p90": (_mean_row(e2e99="100"), "actual_e2e_p99"),
        "ttft above e2e": (_mean_row(ttft="500"), "actual_ttft_mean"),
        "unknown precision": (_mean_row(prec="FP7"), "precision"),
    }
    cases = [Case("meaning", f"validate {n}", val, {"runs.csv": b, "p.json": prof}, ("runs.csv:2", f))
             for n, (b, f) in rows.items()]  # fmt: skip
    fast_files = {"runs.csv": _mean_row(), "p.json": json.dumps(fast).encode()}
    expect = ("runs.csv:2", "workload")
    cases.append(Case("meaning", "validate profile 100x the run's rate", val, fast_files, expect))
    bench = {
        "bench completed 0": (_mean_bench(completed=0), "completed"),
        "bench negative throughput": (_mean_bench(output_throughput=-4.0), "output_throughput"),
        "bench throughput 100x its counts": (_mean_bench(request_throughput=100.0), "request_throughput"),
        "bench itl in seconds": (_mean_bench(mean_itl_ms=0.01, median_itl_ms=0.01), "mean_itl_ms"),
        "bench itls in ms": (_mean_bench(itls=[[10.0] * 3] * 2), "itls"),
    }
    for name, (body, fieldname) in bench.items():
        files, expect = {"b.json": body}, ("b.json", fieldname)
        cases.append(Case("meaning", f"validate {name}", ("vllm", "validate", "{W}/b.json"), files, expect))
        if fieldname != "itls":  # compare reads the summary keys, not the per-request lists
            compare = ("vllm", "compare", "{W}/brokenrun", "{W}/b.json")
            cases.append(Case("meaning", f"compare {name}", compare, files, expect))
    cols = "arrival=arrival_s,input=input_tokens,output=output_tokens,hash_ids=hid"
    stats = ("trace", "stats", "{W}/t.csv", "--columns", cols)
    trace = {"t.csv": GOOD_TRACE}
    cases.append(Case("meaning", "trace hash_ids column missing", stats, trace, ("t.csv", "hid")))
    run = ("run", "--quiet", "{W}/c.toml")
    tomls = {
        "max_model_len beyond the KV cache": (b'[cost]\nmodel = "llama3.1-8b"\nmax_model_len = 10000000\n',
                                              "cost.max_model_len"),
        "cost.ep with a built-in table": (b'[cost]\ntable = "h200-v4flash"\nep = 4\n', "cost.ep"),
        "prefix_caching 0": (b'[cost]\nmodel = "llama3.1-8b"\nprefix_caching = 0\n', "cost.prefix_caching"),
        "ep group not dividing experts": (b'[[pool]]\nrole = "prefill"\n[[pool]]\nrole = "decode"\n'
                                          b"ep_gpus = 12\nattention_ranks = 12\n", "pool.decode.ep_gpus"),
    }  # fmt: skip
    for name, (body, fieldname) in tomls.items():
        files = {"c.toml": body + b"[workload]\nnum_requests = 20\n"}
        cases.append(Case("meaning", f"deploy {name} (round 3)", run, files, ("c.toml", fieldname)))
    return cases
