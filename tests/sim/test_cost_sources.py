"""Fit files as cost.table (with server.tp / cost.ep), measured draft cost, context-aware steps."""

from __future__ import annotations

import numpy as np
import pytest

import specsched
from sim.config import DrafterConfig
from sim.drafter import draft_seconds_table
from specbed.cli import main as specbed
from specsched.fit import Fit
from tests.sim.simutil import run

KNOBS = {"c0": 90e-6, "eta_bw": 0.8, "eta_f": 0.6, "link_bw": 80e9, "hop_latency": 10e-6, "request_s": 1e-5}
BASE = (
    "workload.kind=closed",
    "workload.concurrency=4",
    "workload.num_requests=8",
    "workload.output_tokens=16",
    "drafter.name=eagle3",
    "drafter.gamma=3",
    "policy.name=fixed",
    "policy.k=3",
)


def _fit(tmp_path, model="llama3-8b"):
    path = tmp_path / "fit.json"
    Fit(model, "h100", KNOBS).save(path)
    return str(path)


def test_long_prompts_cost_more_per_step(tmp_path):
    fit = _fit(tmp_path)
    short = run(*BASE, f"cost.table={fit}", "workload.input_tokens=16", "server.kv_tokens=200000")
    long = run(*BASE, f"cost.table={fit}", "workload.input_tokens=8000", "server.kv_tokens=200000")
    # Same batch, same verify lengths: only the context the requests hold differs.
    assert long.summary["tpot_s_mean"] > 1.05 * short.summary["tpot_s_mean"]


def test_fit_file_with_tp_matches_load_cost(tmp_path):
    fit = _fit(tmp_path, "llama2-70b")
    res = run(*BASE, f"cost.table={fit}", "server.tp=4", "workload.input_tokens=16")
    assert res.summary["gpus"] == 4 and res.summary["requests_completed"] == 8
    assert specsched.load_cost(fit, tp=4).latency(1) < specsched.load_cost(fit, tp=2).latency(1)


def test_ep_needs_moe_and_bad_fit_is_one_line(tmp_path, capsys):
    fit = _fit(tmp_path)
    assert (
        specbed(["run", "--set", f"cost.table={fit}", "--set", "cost.ep=8", "--out", str(tmp_path / "o")])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ep" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert specbed(["run", "--set", f"cost.table={bad}", "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.json" in err


def test_measured_draft_cost_by_tokens_requests_or_fit(tmp_path):
    cost = specsched.builtin_cost("h200-dense8b")
    by_tokens = tmp_path / "d_tokens.csv"
    by_tokens.write_text("tokens,seconds\n1,0.001\n101,0.002\n")
    table = draft_seconds_table(DrafterConfig(name="dspark", gamma=5, cost=str(by_tokens)), cost, 4)
    np.testing.assert_allclose(table[1:], 0.001 + 0.001 * (np.arange(1, 5) * 5 - 1) / 100)
    by_req = tmp_path / "d_req.csv"
    by_req.write_text("requests,seconds\n1,0.003\n4,0.006\n")
    table = draft_seconds_table(DrafterConfig(name="eagle3", gamma=5, cost=str(by_req)), cost, 4)
    np.testing.assert_allclose(table[1:], [0.003, 0.004, 0.005, 0.006])
    fit = _fit(tmp_path, "qwen3-4b")
    table = draft_seconds_table(DrafterConfig(name="mtp", gamma=2, cost=fit), cost, 3)
    want = specsched.load_cost(fit)
    np.testing.assert_allclose(table[1:], [want.step_seconds(2 * r, r) for r in (1, 2, 3)])
    assert table[0] == 0


@pytest.mark.parametrize("text", ["a,b\n1,2\n", "tokens,seconds\n1,-1\n"])
def test_bad_draft_cost_is_one_line(tmp_path, capsys, text):
    path = tmp_path / "draft.csv"
    path.write_text(text)
    assert specbed(["run", "--set", f"drafter.cost={path}", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "draft.csv" in err


def test_cost_csv_with_context_column(tmp_path):
    path = tmp_path / "ctx.csv"
    # latency 10 ms at 1 token, 20 ms at 64 tokens, plus 1 µs per KV token held
    path.write_text("tokens,context_tokens,seconds\n1,0,0.010\n1,1000,0.011\n64,500,0.0205\n64,3000,0.023\n")
    table = specsched.CostTable.from_csv(path)
    assert table.kv_token_seconds == pytest.approx(1e-6)
    np.testing.assert_allclose(table.seconds, [0.010, 0.020])
    plain = tmp_path / "plain.csv"
    plain.write_text("tokens,seconds\n1,0.01\n")
    assert specsched.CostTable.from_csv(plain).kv_token_seconds == 0.0


def test_draft_cost_with_context_is_charged_per_kv_token(tmp_path):
    blind = tmp_path / "blind.csv"
    blind.write_text("requests,seconds\n1,0.001\n")
    draft = tmp_path / "draft.csv"  # the same 1 ms at no context, plus 1 µs per KV token held
    draft.write_text("requests,context_tokens,seconds\n1,0,0.001\n1,10000,0.011\n")
    flat = tmp_path / "flat.csv"
    flat.write_text("tokens,seconds\n1,0.01\n")
    sets = (*BASE, f"cost.table={flat}", "cost.layers=10", "workload.input_tokens=500")
    base = run(*sets, f"drafter.cost={blind}")
    with_ctx = run(*sets, f"drafter.cost={draft}")
    assert base.summary["draft_s_mean"] == with_ctx.summary["draft_s_mean"] > 0
    # ~4 requests × ~500 KV tokens × 1 µs ≈ 2 ms more per step
    assert with_ctx.summary["step_s_mean"] > base.summary["step_s_mean"] + 1e-3
