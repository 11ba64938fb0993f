"""`specbed run`: output files, the public summary keys, replay from the saved config, and bad input
(one line on stderr, exit 2, nothing in DIR overwritten)."""

from __future__ import annotations

import json

import pytest

from specbed.cli import main as specbed

PUBLIC_KEYS = {
    "requests_completed",
    "output_tokens",
    "steps",
    "throughput_tok_s",
    "throughput_tok_s_per_gpu",
    "per_user_tok_s_mean",
    "ttft_s_p50",
    "ttft_s_p99",
    "tpot_s_mean",
    "tpot_s_p50",
    "tpot_s_p99",
    "tau_mean",
    "mean_verify_tokens_per_request_step",
    "preemptions",
    "ece_raw",
    "ece_calibrated",
}
SMALL = [
    "--set",
    "workload.num_requests=60",
    "--set",
    "workload.rate=20",
    "--set",
    "acceptance.sts_samples=256",
]


def test_run_writes_results_and_replays(tmp_path, capsys):
    out = tmp_path / "out"
    assert specbed(["run", *SMALL, "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "throughput" in table and "tau" in table
    summary = json.loads((out / "summary.json").read_text())
    assert PUBLIC_KEYS <= set(summary)
    assert summary["requests_completed"] == 60
    rows = (out / "requests.csv").read_text().splitlines()
    assert rows[0].startswith("id,replica,domain,arrival_s") and len(rows) == 61
    assert (out / "series.csv").read_text().startswith("t_s,")
    assert "ece_raw_per_position" in json.loads((out / "confidence.json").read_text())
    again = tmp_path / "again"
    assert specbed(["run", str(out / "config.toml"), "--out", str(again), "--quiet"]) == 0
    assert (again / "summary.json").read_text() == (out / "summary.json").read_text()


def _bad_json(tmp_path):
    path = tmp_path / "curves.json"
    path.write_text(
        json.dumps({"version": 1, "curves": {"dspark": {"math": [0.9, 0.8], "code": "x", "chat": [0.7]}}})
    )
    return str(path)


def _bad_csv(tmp_path):
    path = tmp_path / "cost.csv"
    path.write_text("tokens,seconds\n1,0.01\n8,abc\n")
    return str(path)


BAD = {
    "unknown key": lambda p: ["--set", "workload.rat=3"],
    "wrong type": lambda p: ["--set", "workload.rate=abc"],
    "negative rate": lambda p: ["--set", "workload.rate=-1"],
    "negative gamma": lambda p: ["--set", "drafter.gamma=-1"],
    "probability above 1": lambda p: ["--set", "acceptance.auc=2"],
    "threshold above 1": lambda p: ["--set", "policy.name=threshold", "--set", "policy.threshold=1.5"],
    "curve file of the wrong shape": lambda p: ["--set", f"drafter.curves={_bad_json(p)}"],
    "unknown cost table": lambda p: ["--set", "cost.table=h300-dense9b"],
    "unreadable cost CSV": lambda p: ["--set", f"cost.table={_bad_csv(p)}", "--set", "cost.layers=32"],
    "missing cost CSV": lambda p: ["--set", f"cost.table={p / 'none.csv'}"],
    "missing trace": lambda p: ["--set", "workload.kind=trace", "--set", f"workload.trace={p / 'none.csv'}"],
    "missing config": lambda p: [str(p / "missing.toml")],
    "unknown flag": lambda p: ["--bogus"],
    "malformed --set": lambda p: ["--set", "workload.rate"],
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_leaves_dir_untouched(case, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text('{"earlier": true}\n')
    rc = specbed(["run", *BAD[case](tmp_path), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
    assert (out / "summary.json").read_text() == '{"earlier": true}\n'


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("keep")
    assert specbed(["run", *SMALL, "--out", str(target)]) == 2
    assert target.read_text() == "keep"
    assert "--out" in capsys.readouterr().err
