"""`specbed advise`: one command from vLLM flags + traffic to the four answers (small sweeps only)."""

from __future__ import annotations

import json

from advise import sweep
from advise.inputs import Deployment, Traffic
from specbed.cli import main

BENCH = {"input_lens": [300, 500, 800, 400], "output_lens": [100, 150, 200, 120], "request_rate": 2.0}


def _run(tmp_path, *extra):
    (tmp_path / "b.json").write_text(json.dumps(BENCH))
    out = tmp_path / "adv"
    argv = [
        "advise",
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100",
        "--max-num-seqs",
        "16",
        "--traffic",
        str(tmp_path / "b.json"),
        "--loads",
        "1,8",
        "--requests-per-user",
        "2",
        "--quiet",
        "--out",
        str(out),
        *extra,
    ]
    assert main(argv) == 0
    return out, json.loads((out / "advise.json").read_text())


def test_advise_writes_the_four_answers(tmp_path, capsys):
    out, doc = _run(tmp_path, "--speculative-config", '{"method":"eagle3","num_speculative_tokens":2}')
    text = capsys.readouterr().out
    assert "batch size -> K" in text and "stops paying" in text
    # llama: no MTP, no n-gram curves given; its small sibling as a draft model
    assert set(doc["options"]) == {"none", "eagle3", "draft_model", "adaptive"}
    assert any("draft model llama3.2-1b" in n and "EAGLE-3's built-in curve" in n for n in doc["notes"])
    assert doc["options"]["eagle3"] == "EAGLE-3, K=2"  # the deployment's own K is the one tried
    assert {g["users"] for g in doc["gains"]} == {1, 8}
    assert all(g["band_median_pct"] is not None for g in doc["gains"])  # every gain carries its band
    assert [r["batch_size"] for r in doc["k_schedule"]] == [1, 8]
    report = (out / "report.md").read_text()
    assert "C=1" in report and "C=8" in report and "--speculative-config" in report
    assert (out / "gain.png").stat().st_size > 0 and (out / "pareto.png").stat().st_size > 0


def test_k_schedule_is_the_deployments_own():
    """The schedule advise reports is `deployment_schedule` of the same `[cost]` deployment `run` prices."""
    from analysis.draft_schedule import deployment_schedule

    dep = Deployment("llama3.1-8b", "h100", 1, 16, 8192, 0.9, None)
    tr = Traffic("t", 500.0, 150.0, 0.5, 0.5)
    opt = next(o for o in sweep.options(dep, "vllm", None, ()) if o.key == "adaptive")
    cfg = sweep.config(dep, tr, opt, 8, 1.0)
    assert cfg.server.model is not None and cfg.policy.draft == "adaptive"
    assert sweep.k_schedule(dep, tr, opt, [1, 8]) == deployment_schedule(cfg, [1, 8])[2]


def test_mtp_only_where_the_model_has_it():
    dep = Deployment("deepseek-v3", "h200", 8, 64, 8192, 0.9, None)
    assert "mtp" in {o.key for o in sweep.options(dep, "vllm", None, ())}
    assert sweep.engine_name("0.15.1") == "vllm-0.15" and sweep.engine_name("9.9") == "vllm"


def test_stops_paying_is_the_first_load_from_which_it_never_pays():
    g = [
        {"option": "x", "users": u, "gain_pct": v, "gain_lo_pct": v - 5.0}
        for u, v in ((1, 40.0), (4, -1.0), (16, 3.0), (64, -2.0), (256, -9.0))
    ]
    assert sweep.stops_paying(g, "x") == {"users": 64, "within_band": 4}
