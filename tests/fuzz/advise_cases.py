"""Bad inputs of `specbed advise`: its `vllm serve` flags, traffic files and measured-run pointers — each
one stderr line naming the flag or file, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fuzz.base import Case

_M = ("advise", "--model", "llama3.1-8b", "--quiet", "--loads", "1")
_T = ("--traffic", "{W}/t.json")
_GOOD_BENCH = json.dumps({"input_lens": [100, 200], "output_lens": [50, 60], "request_rate": 2.0}).encode()


def advise_cases() -> list[Case]:
    bench = {"t.json": _GOOD_BENCH}
    flags = {
        "unknown model": (("advise", "--model", "no-such-model", *_T), bench, ("--model",)),
        "unknown gpu": ((*_M, "--gpu", "tpu9", *_T), bench, ("--gpu",)),
        "tp zero": ((*_M, "--tensor-parallel-size", "0", *_T), bench, ("--tensor-parallel-size",)),
        "seqs huge": ((*_M, "--max-num-seqs", "99999999", *_T), bench, ("--max-num-seqs",)),
        "mem util": ((*_M, "--gpu-memory-utilization", "1.5", *_T), bench, ("--gpu-memory-utilization",)),
        "spec not json": ((*_M, "--speculative-config", "{k:3", *_T), bench, ("--speculative-config",)),
        "spec bad k": (
            (*_M, "--speculative-config", '{"num_speculative_tokens": 0}', *_T),
            bench,
            ("--speculative-config",),
        ),
        "loads text": (("advise", "--model", "llama3.1-8b", "--loads", "1,x", *_T), bench, ("--loads",)),
        "loads zero": (("advise", "--model", "llama3.1-8b", "--loads", "0", *_T), bench, ("--loads",)),
        "no traffic": (_M, {}, ("--traffic",)),
        "missing traffic": ((*_M, "--traffic", "{W}/missing.json"), {}, ("missing.json",)),
        "bench no lens": ((*_M, *_T), {"t.json": b'{"request_rate": 1}'}, ("t.json", "input_lens")),
        "bench text lens": (
            (*_M, *_T),
            {"t.json": b'{"input_lens": ["a"], "output_lens": [1]}'},
            ("t.json", "input_lens"),
        ),
        "bench unequal": (
            (*_M, *_T),
            {"t.json": b'{"input_lens": [1, 2], "output_lens": [1]}'},
            ("t.json", "input_lens"),
        ),
        "bench not json": ((*_M, *_T), {"t.json": b"{not json"}, ("t.json",)),
        "runs no workloads": ((*_M, "--runs", "{W}/r.csv"), {"r.csv": b"a,b\n1,2\n"}, ("--workloads",)),
        "unknown profile": (
            (*_M, "--profile", "nope", "--workloads", "{W}/p.json"),
            {"p.json": b'{"workloads": {}}'},
            ("p.json",),
        ),
    }
    ex = Path(__file__).resolve().parents[2] / "examples" / "vllm"
    run = {"r.csv": (ex / "runs.csv").read_bytes(), "p.json": (ex / "workloads.json").read_bytes()}
    pick = ("--runs", "{W}/r.csv", "--workloads", "{W}/p.json")
    flags["run of another model"] = (
        ("advise", "--model", "llama3.1-70b", "--quiet", *pick, "--row", "1"),
        run,
        ("r.csv", "--row"),
    )
    flags["runs without a row"] = ((*_M, *pick), run, ("r.csv", "--row"))
    flags["row not there"] = ((*_M, *pick, "--row", "99"), run, ("r.csv", "--row"))
    return [Case("advise", name, argv, files, expect) for name, (argv, files, expect) in flags.items()]
