"""`specbed search` over a disaggregated base: pool-size axes, run by sim.disagg, priced by both pools."""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path

import pytest

from specbed.cli import main

BASE = """seed = 0
[workload]
kind = "poisson"
rate = 12.0
num_requests = 240
input_tokens = 1024
output_tokens = 64
[drafter]
name = "mtp"
gamma = 1
[policy]
name = "fixed"
k = 1
[cost]
table = "h200-v4flash"
[server]
max_num_seqs = 128
[handoff]
link = "ib-400g"
[[pool]]
role = "prefill"
replicas = 1
[[pool]]
role = "decode"
replicas = 1
"""
SPACE = """name = "pools"
base = "base.toml"
[axes]
"pool.prefill.replicas" = [1, 2]
"pool.decode.replicas" = [1, 2]
[search]
rungs = [1.0]
"""
SLO = "ttft_p90<=2s,itl_p99<=100ms"


def _search(tmp_path: Path, space: str = SPACE, slo: str = SLO) -> int:
    (tmp_path / "base.toml").write_text(BASE)
    (tmp_path / "space.toml").write_text(space)
    argv = ["search", str(tmp_path / "space.toml"), "--traffic", str(tmp_path / "base.toml"), "--slo", slo,
            "--out", str(tmp_path / "out"), "--quiet", "--jobs", "1"]  # fmt: skip
    return main(argv)


def test_a_tiny_disaggregated_search_end_to_end(tmp_path, capsys):
    assert _search(tmp_path) == 0
    printed = capsys.readouterr().out
    assert "not screened" not in printed  # both pools are screened now
    out = tmp_path / "out"
    rows = list(csv.DictReader((out / "ranked.csv").open()))
    assert rows
    by_size = {(int(r["pool.prefill.replicas"]), int(r["pool.decode.replicas"])): r for r in rows}
    for (p, d), row in by_size.items():
        assert int(row["gpus"]) == p + d  # h200-v4flash: one GPU a replica, both pools priced
    assert (int(rows[0]["pool.prefill.replicas"]), int(rows[0]["pool.decode.replicas"])) == (1, 1)
    launch = (out / "vllm_serve.sh").read_text()
    assert "TEMPLATE" in launch and launch.count("vllm serve") == 2 and "--kv-transfer-config" in launch
    winner = tomllib.loads((out / "winner.toml").read_text())
    assert {p["role"] for p in winner["pool"]} == {"prefill", "decode"}
    assert main(["disagg", str(out / "winner.toml")]) == 0  # the winner runs as written


def test_a_lost_ttft_drops_the_small_prefill_pool(tmp_path, capsys):
    slo = "ttft_p90<=100ms,itl_p99<=100ms"
    code = _search(tmp_path, slo=slo)
    capsys.readouterr()
    dropped = list(csv.DictReader((tmp_path / "out" / "dropped.csv").open()))
    ranked = list(csv.DictReader((tmp_path / "out" / "ranked.csv").open())) if code == 0 else []
    assert ranked and all(int(r["pool.prefill.replicas"]) == 2 for r in ranked)
    assert any("ttft_p90" in r["why"] for r in dropped)


def test_a_bad_pool_axis_names_the_space_file_and_field(tmp_path, capsys):
    space = SPACE.replace("[1, 2]\n[search]", "[0, 1]\n[search]")
    assert _search(tmp_path, space=space) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "space.toml:5" in err and "pool.decode.replicas" in err


def _cands(tmp_path: Path, base: str = BASE):
    from analysis.search.halving import candidates_of
    from analysis.search.prices import load_prices
    from analysis.search.space import load_space, traffic_overrides

    (tmp_path / "base.toml").write_text(base)
    (tmp_path / "space.toml").write_text(SPACE)
    space = load_space(tmp_path / "space.toml")
    return candidates_of(space, traffic_overrides(str(tmp_path / "base.toml")), load_prices())


def test_the_screen_bounds_both_pools(tmp_path):
    from analysis.search import pools
    from analysis.search.screen import Screen, traffic_of
    from analysis.search.slo import parse_slo

    cands = _cands(tmp_path, BASE.replace("input_tokens = 1024", "input_tokens = 16384"))
    screen = Screen(traffic_of(pools.colocated(cands[0].cell.config)), parse_slo(SLO), 0.1)
    verdicts = {tuple(c.cell.axes.values()): screen(c.cell.config) for c in cands}
    small, big = verdicts[(1, 1)], verdicts[(2, 1)]
    assert not small.ok and "the prefill pool carries" in small.reason  # 16k-token prompts at 12 req/s
    assert big.capacity == __import__("pytest").approx(2 * small.capacity)  # prefill-bound: ∝ replicas
    fast = Screen(traffic_of(pools.colocated(cands[0].cell.config)), parse_slo("itl_p99<=1ms"), 0.1)
    assert "the decode pool: its fastest step" in fast(cands[0].cell.config).reason


@pytest.mark.parametrize("warmup", [0.0, 0.1])
def test_a_lost_ttft_stops_a_disaggregated_run_early_and_rightly(tmp_path, warmup):
    """No warm-up: the fleet's window is known up front, so its prefill stage is watched; with one, its
    decode stage (`sim.disagg.run.simulate_disagg`)."""
    from analysis.search.cellmodel import SearchModel

    base = BASE.replace("rate = 12.0", "rate = 40.0").replace("num_requests = 240", "num_requests = 800")
    base = base.replace("[drafter]", f"[metrics]\nwarmup = {warmup}\n[drafter]")
    (one,) = [c for c in _cands(tmp_path, base) if tuple(c.cell.axes.values()) == (1, 1)]
    stopped = SearchModel().run({"sim": one.cell.config, "stop": {"slo": "ttft_p90<=300ms", "tol": 0.0}})
    assert stopped["stopped"] and "ttft_p90 lost" in stopped["stopped"]
    full = SearchModel().run({"sim": one.cell.config, "stop": None})
    assert full["stopped"] is None and full["ttft_s_p90"] > 0.3  # the stop was right
