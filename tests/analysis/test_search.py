"""`specbed search`: SLO strings, price tables, spaces, the screen, early stop, halving, cache, outputs."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest

from analysis.search.prices import load_prices
from analysis.search.slo import parse_slo
from analysis.search.space import load_space, traffic_overrides
from specbed.cli import main
from specsched.io.errors import InputError

TRAFFIC = """[workload]
kind = "poisson"
rate = 150.0
num_requests = 600
input_tokens = 256
output_tokens = 64
"""
SPACE = """name = "t"
[axes]
"cost.table" = ["h100-dense8b", "h200-dense8b"]
"server.replicas" = [1, 2, 4]
[[zip]]
label = ["no-spec", "DSpark"]
"drafter.name" = ["none", "dspark"]
"drafter.gamma" = [0, 7]
"policy.name" = ["ar", "dspark"]
[search]
rungs = [0.4, 1.0]
keep = 3
"""
SLO = "ttft_p90<=1s,itl_p50<=40ms"


def _files(tmp_path: Path, space: str = SPACE) -> tuple[Path, Path]:
    (tmp_path / "space.toml").write_text(space)
    (tmp_path / "traffic.toml").write_text(TRAFFIC)
    return tmp_path / "space.toml", tmp_path / "traffic.toml"


def _search(tmp_path: Path, out: str, *extra: str, space: str = SPACE) -> int:
    sp, tr = _files(tmp_path, space)
    argv = ["search", str(sp), "--traffic", str(tr), "--slo", SLO, "--out", str(tmp_path / out), "--quiet"]
    return main([*argv, *extra])


def test_slo_terms_units_and_margins():
    slo = parse_slo("ttft_p90<=2s, itl_p50<25ms,itl_p99<=60000us,speed_mean>=40tok/s")
    assert [t.key for t in slo.terms] == ["ttft_s_p90", "itl_s_p50", "itl_s_p99", "per_user_tok_s_mean"]
    assert [t.bound for t in slo.terms] == pytest.approx([2.0, 0.025, 0.06, 40.0])
    s = {"ttft_s_p90": 1.0, "itl_s_p50": 0.02, "itl_s_p99": 0.066, "per_user_tok_s_mean": 50.0}
    assert slo.margins(s)["itl_p99"] == pytest.approx(-0.1)
    assert not slo.met(s) and slo.margin(s) == pytest.approx(-0.1)
    assert "itl_p99 = 66.0 ms > 60.0 ms" == slo.worst(s)
    assert slo.margin({}) == -math.inf
    assert parse_slo(slo.text()).terms == slo.terms


@pytest.mark.parametrize("bad", ["", "ttft<=1s", "ttft_p90>=1s", "ttft_p90<=1h", "itl_p50<=0", "x", "a,b"])
def test_bad_slo_strings_are_one_line_input_errors(bad):
    with pytest.raises(InputError, match="--slo"):
        parse_slo(bad)


def test_shipped_prices_are_dated_and_sourced():
    prices = load_prices()
    assert {"h100", "h200", "b200"} <= set(prices.rows)
    for row in prices.rows.values():
        assert row.usd_per_hour > 0 and row.source.strip() and row.date.strip()


def test_traffic_is_a_trace_or_a_config(tmp_path):
    assert ("workload.trace", "azure2023-conv") in [(k, v) for k, v, _ in traffic_overrides("azure2023-conv")]
    _, tr = _files(tmp_path)
    keys = {k: v for k, v, _ in traffic_overrides(str(tr), 2.0)}
    assert keys["workload.rate"] == 150.0 and keys["workload.speedup"] == 2.0


def test_space_options_default_and_validated(tmp_path):
    sp, _ = _files(tmp_path)
    space = load_space(sp)
    assert space.options.rungs == (0.4, 1.0) and space.options.keep == 3 and space.options.tol(1) == 0.0
    (tmp_path / "bad.toml").write_text(SPACE.replace("keep = 3", "keep = 0"))
    with pytest.raises(InputError, match="search.keep"):
        load_space(tmp_path / "bad.toml")


def test_search_ranks_drops_with_reasons_and_writes_the_launch(tmp_path, capsys):
    assert _search(tmp_path, "out", "--jobs", "1") == 0
    out = tmp_path / "out"
    text = capsys.readouterr().out
    assert "winner: vllm serve" in text
    dropped = (out / "dropped.csv").read_text()
    assert "screen: carries" in dropped  # one replica cannot carry 150 req/s
    lines = dropped.strip().splitlines()[1:]
    assert lines and all(line.rsplit(",", 1)[-1].strip() for line in lines)  # every drop says why
    ranked = (out / "ranked.csv").read_text().splitlines()
    assert len(ranked) >= 2
    cmd = (out / "vllm_serve.sh").read_text().splitlines()[-1]
    assert cmd.startswith("vllm serve") and "--max-num-seqs" in cmd
    if "dspark" in cmd:
        spec = json.loads(cmd.split("--speculative-config ")[1].strip("'"))
        assert spec["method"] == "dspark" and spec["num_speculative_tokens"] == 7
    cfg = tomllib.loads((out / "winner.toml").read_text())
    assert cfg["workload"]["kind"] == "poisson" and (out / "pareto.png").stat().st_size > 0


def test_same_result_for_jobs_1_and_2_and_resume_reuses_the_cache(tmp_path, capsys):
    assert _search(tmp_path, "a", "--jobs", "1") == 0
    assert _search(tmp_path, "b", "--jobs", "2") == 0
    a = (tmp_path / "a" / "ranked.csv").read_text()
    assert a == (tmp_path / "b" / "ranked.csv").read_text()
    assert (tmp_path / "a" / "dropped.csv").read_text() == (tmp_path / "b" / "dropped.csv").read_text()
    capsys.readouterr()
    assert _search(tmp_path, "a", "--jobs", "1") == 2  # a finished search: --resume or --force
    assert "--resume" in capsys.readouterr().err
    assert _search(tmp_path, "a", "--jobs", "1", "--resume") == 0
    text = capsys.readouterr().out
    assert (tmp_path / "a" / "ranked.csv").read_text() == a
    stages = [
        line.split()
        for line in text.splitlines()
        if line.strip()[:1].isdigit() and len(line.split()) in (6, 7)
    ]
    assert stages and all(int(row[3]) == 0 for row in stages)  # ran 0: every run came from the cache


def test_a_lost_slo_stops_the_run_early(tmp_path):
    from analysis.model import SimModel
    from analysis.search.cellmodel import SearchModel

    cfg_text = TRAFFIC.replace("rate = 150.0", "rate = 100.0").replace(
        "num_requests = 600", "num_requests = 3000"
    )
    sets = [("cost.table", "h100-dense8b", (None, None)), ("server.max_num_seqs", 16, (None, None))]
    config = SimModel().resolve(None, tomllib.loads(cfg_text), sets)
    summary = SearchModel().run({"sim": config, "stop": {"slo": "ttft_p90<=0.5s", "tol": 0.0}})
    assert summary["stopped"] and "ttft_p90 lost" in summary["stopped"]
    full = SearchModel().run({"sim": config, "stop": None})
    assert full["stopped"] is None and full["ttft_s_p90"] > 0.5  # the stop was right


def test_budget_stops_cleanly_with_the_best_so_far(tmp_path, capsys):
    code = _search(tmp_path, "out", "--jobs", "1", "--budget-s", "0.001")
    assert code in (0, 1)
    assert "budget" in capsys.readouterr().out
    assert (tmp_path / "out" / "summary.md").is_file()


def test_shipped_search_spaces_parse_and_price():
    from analysis.search.halving import candidates_of

    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "configs" / "search").glob("*.toml"))
    assert files
    for path in files:
        cands = candidates_of(load_space(path), traffic_overrides("azure2023-conv", 2.0), load_prices())
        assert cands and all(c.usd_per_hour > 0 for c in cands), path


def test_group_halving_keeps_the_best_of_every_group(tmp_path, capsys):
    space = SPACE.replace("keep = 3", 'keep = 1\neta = 100\ntop = 0\ngroup = ["cost.table", "series"]')
    assert _search(tmp_path, "g", "--jobs", "1", space=space) == 0
    ranked = (tmp_path / "g" / "ranked.csv").read_text().splitlines()[1:]
    seen = {(row.split(",")[2], row.split(",")[6]) for row in ranked}  # (series, cost.table)
    assert len(seen) == len(ranked) and len(ranked) >= 3  # one per group reached full length
    bad = SPACE.replace("keep = 3", 'group = ["server.bogus"]')
    assert _search(tmp_path, "h", space=bad) == 2
    assert "search.group" in capsys.readouterr().err


def test_a_resumed_search_under_another_slo_reuses_finished_runs(tmp_path, capsys):
    assert _search(tmp_path, "r", "--jobs", "1") == 0
    sp, tr = _files(tmp_path)
    argv = ["search", str(sp), "--traffic", str(tr), "--out", str(tmp_path / "r"), "--quiet", "--resume"]
    capsys.readouterr()
    assert main([*argv, "--slo", "ttft_p90<=1.5s,itl_p50<=40ms"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    stages = [row for row in rows if len(row) in (6, 7) and row[0].isdigit()]
    assert stages and sum(int(row[4]) for row in stages) > 0  # cached runs served the new SLO


def test_ray_backend_gives_the_same_result_as_jobs_1(tmp_path):
    pytest.importorskip("ray")
    small = SPACE.replace('"server.replicas" = [1, 2, 4]', '"server.replicas" = [2]')
    assert _search(tmp_path, "local", "--jobs", "1", space=small) == 0
    assert _search(tmp_path, "ray", "--jobs", "2", "--backend", "ray", space=small) == 0
    for name in ("ranked.csv", "dropped.csv", "vllm_serve.sh"):
        assert (tmp_path / "local" / name).read_text() == (tmp_path / "ray" / name).read_text(), name


def test_a_vllm_knob_deployment_is_priced_by_its_gpu_and_launched_with_its_knobs():
    from analysis.model import SimModel
    from analysis.search.launch import vllm_command
    from analysis.search.prices import gpu_kind

    knobs = {"model": "llama3.1-8b", "gpu": "h200", "gpu_memory_utilization": 0.8, "prefix_caching": False}
    sets = [(f"server.{k}", v, (None, None)) for k, v in knobs.items()]
    config = SimModel().resolve(None, tomllib.loads(TRAFFIC), sets)
    assert gpu_kind(config) == "h200"
    cmd = vllm_command(config, None, {})
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct" in cmd and "--gpu-memory-utilization 0.8" in cmd
    assert "--no-enable-prefix-caching" in cmd


def test_siblings_whose_cap_never_binds_share_one_run_and_it_is_their_own(tmp_path, capsys):
    from analysis.model import SimModel
    from analysis.search.cellmodel import SearchModel
    from analysis.search.siblings import covers

    space = SPACE.replace(
        '"server.replicas" = [1, 2, 4]', '"server.replicas" = [2]\n"server.max_num_seqs" = [64, 128, 256]'
    )
    assert _search(tmp_path, "s", "--jobs", "1", space=space) == 0
    text = capsys.readouterr().out
    head = next(line.split() for line in text.splitlines() if line.startswith("stage"))
    stages = [line.split() for line in text.splitlines() if line[:6].strip().isdigit()]
    assert "shared" in head and sum(int(row[head.index("shared")]) for row in stages) > 0
    sets = [("cost.table", "h100-dense8b", (None, None)), ("server.replicas", 2, (None, None))]
    own = {}
    for seqs in (64, 256):
        config = SimModel().resolve(
            None, tomllib.loads(TRAFFIC), [*sets, ("server.max_num_seqs", seqs, (None, None))]
        )
        own[seqs] = SearchModel().run({"sim": config, "stop": None})
    assert covers(own[64], 64)  # the cap of 64 never bound ...
    for key in ("ttft_s_p90", "itl_s_p99", "throughput_tok_s", "steps", "tpot_s_mean"):
        assert own[64][key] == own[256][key], key  # ... so a cap of 256 runs the same, step for step


def csv_rows(path: Path):
    import csv

    return csv.DictReader(path.open())


def test_the_price_bound_keeps_the_top_and_says_why(tmp_path, capsys):
    wide = SPACE.replace("keep = 3", "keep = 3\ntop = 2")
    assert _search(tmp_path, "b", "--jobs", "1", space=wide) == 0
    assert _search(tmp_path, "n", "--jobs", "1", space=SPACE.replace("keep = 3", "keep = 100\ntop = 0")) == 0
    printed = capsys.readouterr().out
    assert "price tiers" in printed
    bounded = [r["key"] for r in csv_rows(tmp_path / "b" / "ranked.csv")]
    exhaustive = [r["key"] for r in csv_rows(tmp_path / "n" / "ranked.csv")]
    assert bounded[:2] == exhaustive[:2]  # the bound's top equals the unbounded search's
    why = [r["why"] for r in csv_rows(tmp_path / "b" / "dropped.csv")]
    assert any(w.startswith("price bound: cannot rank in the top 2") for w in why)


def test_a_lost_itl_quantile_stops_the_run_early_and_rightly():
    from analysis.model import SimModel
    from analysis.search.cellmodel import SearchModel

    cfg_text = TRAFFIC.replace("num_requests = 600", "num_requests = 3000")
    sets = [("cost.table", "h100-dense8b", (None, None)), ("server.max_num_seqs", 16, (None, None))]
    config = SimModel().resolve(None, tomllib.loads(cfg_text), sets)  # ~12,000 steps: watched 11 times
    full = SearchModel().run({"sim": config, "stop": None})
    bound = full["itl_s_p50"]  # half the gaps are over it: lost long before the end
    stop = {"slo": f"itl_p99<={bound * 1e3:.3f}ms", "tol": 0.0}
    summary = SearchModel().run({"sim": config, "stop": stop})
    assert summary["stopped"] and "itl_p99 lost" in summary["stopped"]
    assert summary["stopped_at_s"] < full["sim_time_s"]
    kept = SearchModel().run(
        {"sim": config, "stop": {**stop, "slo": f"itl_p99<={full['itl_s_p99'] * 1.01e3:.3f}ms"}}
    )
    assert kept["stopped"] is None  # a met bound is never stopped
