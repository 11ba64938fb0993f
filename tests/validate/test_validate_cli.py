"""`specbed validate` end to end on a tiny profile, the JSON shape, and the calibration's least squares."""

import json
import re

import numpy as np
import pytest

from specbed.cli import main
from specsched.price.knobs import Knobs
from validate.calibrate import FEATURES, PRIORS, bounded_lsq, solve

HEADER = (
    "exp_id,folder,model,hardware,tp,dp,workload,max_num_batched_tokens,cpu_offload,gpu_mem_util,precision,"
    "actual_e2e_mean,actual_e2e_p90,actual_e2e_p99,actual_ttft_mean,actual_ttft_p90,actual_ttft_p99,"
    "actual_itl_mean\n"
)
PROFILES = {
    "workloads": {
        "tiny": {
            "stages": [{"rate": 2.0, "duration": 5}],
            "load_type": "constant",
            "data": {
                "type": "shared_prefix",
                "shared_prefix": {
                    "num_unique_system_prompts": 2,
                    "num_users_per_system_prompt": 2,
                    "system_prompt_len": 32,
                    "question_len": 64,
                    "output_len": 16,
                },
            },
        },
        "tiny-lite": {
            "stages": [{"rate": 1.0, "duration": 5}],
            "load_type": "constant",
            "data": {
                "type": "shared_prefix",
                "shared_prefix": {
                    "num_unique_system_prompts": 1,
                    "num_users_per_system_prompt": 2,
                    "system_prompt_len": 32,
                    "question_len": 64,
                    "output_len": 16,
                },
            },
        },
    }
}
KEYS = {"e2e_mean", "e2e_p90", "e2e_p99", "ttft_mean", "ttft_p90", "ttft_p99", "itl_mean"}


def _files(tmp_path):
    rows = [
        "1,1-qwen-tiny-lite-1,Qwen/Qwen2.5-7B-Instruct,H100,1,,tiny,256,,,FP16,120,130,140,20,25,30,7\n",
        "2,2-scout-tiny,RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic,H100,2,,tiny,512,,0.9,FP8,400,420,440,60,70,80,22\n",
        "3,3-unknown,acme/Unknown-1B,H100,1,,tiny,256,,,FP16,200,210,220,20,25,30,12\n",
    ]
    (tmp_path / "runs.csv").write_text(HEADER + "".join(rows))
    (tmp_path / "p.json").write_text(json.dumps(PROFILES))


def test_validate_writes_the_issues_json(tmp_path, capsys):
    _files(tmp_path)
    out = tmp_path / "out"
    code = main(
        [
            "validate",
            str(tmp_path / "runs.csv"),
            "--workloads",
            str(tmp_path / "p.json"),
            "--out",
            str(out),
            "--json",
            str(tmp_path / "v.json"),
        ]
    )
    assert code == 0
    doc = json.loads((tmp_path / "v.json").read_text())
    assert set(doc) == {"runs", "median_error_pct"} and set(doc["median_error_pct"]) == KEYS
    ok, bad = doc["runs"][:2], doc["runs"][2]
    for r in ok:
        keys = {"exp_id", "folder", "model", "hardware", "predicted", "actual", "error_pct", "load", "itl"}
        assert set(r) == keys
        assert r["load"]["sustainable_req_s"] > 0 and r["itl"]["predicted_per_token_ms"] > 0
        assert set(r["predicted"]) == KEYS and all(v > 0 for v in r["predicted"].values())
    assert "error" in bad and "predicted" not in bad
    assert {p.name for p in out.iterdir()} >= {"report.md", "validate.json", "validate.png"}
    assert "median |error|" in capsys.readouterr().out


def test_no_modelled_run_is_bad_input_naming_the_first_row_and_field(tmp_path, capsys):
    (tmp_path / "runs.csv").write_text(
        HEADER + "3,3-x,acme/Unknown-1B,H100,1,,tiny,256,,,FP16,200,210,220,20,25,30,12\n"
    )
    (tmp_path / "p.json").write_text(json.dumps(PROFILES))
    assert main(["validate", str(tmp_path / "runs.csv"), "--workloads", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.search(r"no run could be modelled.*runs.csv:2: field 'model'", err), err


def test_bounded_lsq_is_exact_on_a_small_problem():
    a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    lo, hi = np.array([0.0, 0.0]), np.array([0.4, 1.0])
    assert bounded_lsq(a, np.array([1.0, -1.0, 0.0]), lo, hi) == pytest.approx([0.4, 0.0])
    assert bounded_lsq(a, np.array([0.2, 0.3, 0.5]), lo, hi) == pytest.approx([0.2, 0.3])


def _rows(truth: Knobs, n: int, rng, moe=True):
    rows, y = [], []
    for _ in range(n):
        layers = rng.integers(24, 96)
        f = np.array(
            [
                1.0,
                layers,
                rng.uniform(2e-3, 20e-3),
                rng.uniform(0, 8e-3),
                rng.choice([0, 1]) * 2 * layers,
                rng.choice([0, 0, 48]) if moe else 0,
                layers * rng.uniform(4, 64),
                rng.choice([0, 1]) * rng.choice([32000, 128256, 152064]) * rng.choice([1, 1, 2]),
            ]
        )
        phi = rng.uniform(0, 1e-3)
        rows.append((f, phi))
        y.append(
            truth.step_s
            + truth.c0 * f[1]
            + f[2] / truth.eta_bw
            + f[3] / truth.eta_kv
            + truth.link_latency * f[4]
            + truth.c_moe * f[5]
            + truth.c_token * f[6]
            + truth.c_vocab * f[7]
            + phi
        )
    return rows, y


def test_solve_recovers_knobs_from_their_own_step_times():
    truth = Knobs(step_s=0.2e-3, c0=30e-6, eta_bw=0.85, eta_kv=0.75, link_latency=8e-6, c_moe=50e-6,
                  c_token=0.4e-6, c_vocab=5e-9)  # fmt: skip
    rows, y = _rows(truth, 40, np.random.default_rng(0))
    got = solve(rows, y, Knobs())
    assert len(FEATURES) == 8
    assert got.eta_bw == pytest.approx(0.85, rel=0.05) and got.eta_kv == pytest.approx(0.75, rel=0.1)
    assert got.c_moe == pytest.approx(50e-6, rel=0.2) and got.c_token == pytest.approx(0.4e-6, rel=0.2)
    assert got.c_vocab == pytest.approx(5e-9, rel=0.2)


def test_a_knob_no_run_identifies_stays_at_its_prior():
    # no MoE run: c_moe is its prior mean, not whatever absorbs the other residuals
    truth = Knobs(c0=30e-6, eta_bw=0.85, eta_kv=0.8, link_latency=8e-6)
    rows, y = _rows(truth, 12, np.random.default_rng(1), moe=False)
    got = solve(rows, y, Knobs())
    assert got.c_moe == pytest.approx(PRIORS["c_moe"][0])
    # the efficiencies stay inside their physical bounds however the runs pull
    bad = [v * 3.0 for v in y]
    worst = solve(rows, bad, Knobs())
    assert 0.6 - 1e-9 <= worst.eta_bw <= 0.95 + 1e-9 and 0.6 - 1e-9 <= worst.eta_kv <= 0.95 + 1e-9


def test_a_vllm_bench_serve_result_is_replayed_from_its_own_requests(tmp_path):
    n = 30
    doc = {
        "model_id": "Qwen/Qwen2.5-7B-Instruct",
        "request_rate": 5.0,
        "input_lens": [200] * n,
        "output_lens": [20] * n,
        "ttfts": [0.03] * n,
        "itls": [[0.008] * 19] * n,
    }
    (tmp_path / "b.json").write_text(json.dumps(doc))
    code = main(["validate", str(tmp_path / "b.json"), "--json", str(tmp_path / "v.json")])
    assert code == 0
    run = json.loads((tmp_path / "v.json").read_text())["runs"][0]
    assert run["actual"]["itl_mean"] == pytest.approx(8.0)
    assert run["actual"]["e2e_mean"] == pytest.approx(30 + 19 * 8)
    assert set(run["predicted"]) == KEYS


def test_validate_json_to_stdout_is_the_json_only(tmp_path, capsys):
    """`specbed vllm validate ... --json -`: standard output parses as strict JSON, nothing else."""
    n = 12
    doc = {"model_id": "Qwen/Qwen2.5-7B-Instruct", "request_rate": 5.0, "input_lens": [100] * n,
           "output_lens": [8] * n, "ttfts": [0.03] * n, "itls": [[0.008] * 7] * n}  # fmt: skip
    (tmp_path / "b.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["vllm", "validate", str(tmp_path / "b.json"), "--json", "-"]) == 0

    def refuse(token):
        raise AssertionError(f"bare {token}")

    out = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert out["runs"][0]["exp_id"]
