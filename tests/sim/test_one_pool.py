"""One pool model (issue 31, item 1): one admission, one run loop, one steady window and one summary in
the simulator and the search (each an AST scan that fails when a second appears); a fleet of one `both`
pool is `specbed run` bit for bit; a request arriving with its KV is an external prefix hit."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

from sim.cli import main as run_cli
from sim.config_io import load_config
from sim.run import prepare
from sim.wiring import Feed, run_pool

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sim", "analysis")
#: a latency statistic's summary key (what only `sim.metrics.summarize` writes)
LATENCY_KEY = re.compile(r"^(ttft|tpot|e2e|queue|itl)_s_(mean|p\d+)$")


def _trees():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def _functions():
    for where, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield where, node


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _called(node, name: str) -> list[ast.Call]:
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if (isinstance(f, ast.Name) and f.id == name) or (
                isinstance(f, ast.Attribute) and f.attr == name
            ):
                out.append(n)
    return out


def test_one_admission_rule_and_one_replica_class():
    admits = [f"{where}:{fn.name}" for where, fn in _functions() if fn.name == "_admit"]
    assert admits == ["sim/server.py:_admit"]
    subclasses = [
        f"{where}:{node.name}"
        for where, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and any("Replica" in _names(base) for base in node.bases)
    ]
    assert subclasses == []  # a pool's differences are its Feed, never a Replica subclass


def test_one_run_loop():
    loops = [f"{where}:{fn.name}" for where, fn in _functions() if _called(fn, "Environment")]
    assert loops == ["sim/wiring.py:run_pool"]


def test_one_steady_window():
    """⌈warmup·N⌉ and ⌈(1 − drain)·N⌉ are written once; every window reads them from there."""
    ranks = sorted(
        {
            f"{where}:{fn.name}"
            for where, fn in _functions()
            for call in _called(fn, "ceil")
            if {"warmup", "drain"} & _names(call)
        }
    )
    assert ranks == ["sim/metrics.py:window_ranks"]


def test_one_summary():
    """`sim.metrics.summarize` is the only summary and the only writer of latency statistics' keys."""
    assert [f"{where}:{fn.name}" for where, fn in _functions() if fn.name == "summarize"] == [
        "sim/metrics.py:summarize"
    ]
    writers = set()
    for where, tree in _trees():
        for node in ast.walk(tree):
            keys = []
            if isinstance(node, ast.Dict):
                keys = node.keys
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                keys = [node.slice]
            for key in keys:
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and LATENCY_KEY.match(key.value)
                ):
                    writers.add(where)
    assert writers <= {"sim/metrics.py"}


BASE = """seed = 3
[workload]
kind = "poisson"
rate = 30.0
num_requests = 150
[drafter]
gamma = 3
[cost]
table = "h200-v4flash"
[server]
"""


def test_a_fleet_of_one_both_pool_is_specbed_run_bit_for_bit(tmp_path):
    (tmp_path / "colocated.toml").write_text(
        BASE + 'replicas = 2\nmax_num_seqs = 32\nrouter = "round_robin"\n'
    )
    pool = '[[pool]]\nrole = "both"\nreplicas = 2\nmax_num_seqs = 32\nrouter = "round_robin"\n'
    (tmp_path / "fleet.toml").write_text(BASE + pool)
    for name in ("colocated", "fleet"):
        assert run_cli([str(tmp_path / f"{name}.toml"), "--out", str(tmp_path / name), "--quiet"]) == 0
    files = sorted(p.name for p in (tmp_path / "colocated").iterdir())
    assert {"summary.json", "requests.csv", "series.csv", "config.toml"} <= set(files)
    for name in files:
        assert (tmp_path / "fleet" / name).read_bytes() == (tmp_path / "colocated" / name).read_bytes(), name


def test_a_request_arriving_with_its_kv_is_an_external_hit():
    """Fed with every prompt's KV held and its first token out (a decode pool's feed), each request computes
    one token before it decodes, emits the rest of its output, and every KV slot is released."""
    cfg = load_config(None, ["workload.num_requests=60", "workload.rate=20", "cost.table=h200-v4flash"])
    prep = prepare(cfg)
    wl = prep.workload
    prefill = []
    feed = Feed(external=wl.input_tokens, emitted=np.ones_like(wl.input_tokens))
    rec = run_pool(prep, feed, observer=lambda rep, start, s, r, verify, pf, *rest: prefill.append(pf))
    assert sum(prefill) == len(wl) and int(rec.total_preemptions) == 0
    assert np.array_equal(rec.generated, wl.output_tokens)
    colocated = run_pool(prepare(cfg))
    assert np.all(rec.first_token_s - rec.arrival_s < colocated.first_token_s - colocated.arrival_s)


def test_specbed_disagg_is_an_alias_of_specbed_run(tmp_path, capsys):
    from sim.disagg.cli import main as disagg_cli

    small = str(ROOT / "configs" / "disagg-small.toml")
    sets = ["--set", "workload.num_requests=80"]
    assert run_cli([small, *sets, "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert disagg_cli([small, *sets, "--out", str(tmp_path / "alias"), "--json", "-"]) == 0
    printed = capsys.readouterr().out
    files = sorted(p.name for p in (tmp_path / "run").iterdir() if p.name != ".job.json")
    assert files == ["config.toml", "requests.csv", "summary.json"]
    for name in files:
        assert (tmp_path / "alias" / name).read_bytes() == (tmp_path / "run" / name).read_bytes(), name
    assert printed == (tmp_path / "run" / "summary.json").read_text()  # strict JSON: NaN is null
    from sim.disagg.config import load_pools

    assert load_pools(tmp_path / "run" / "config.toml") == load_pools(small, sets[1:])
