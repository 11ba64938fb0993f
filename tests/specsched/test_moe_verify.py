"""The verify pass of a MoE target (specsched.price.moe_verify), the replay's named step parts
(validate.spec_replay.step_parts) and the per-engine error band every speculative prediction quotes
(validate.spec_replay.engine_bands, specsched.spec_knobs.engine_band, sim.deploy.draft.accuracy)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import specsched.spec_knobs as spec_knobs
from specsched.price import get_gpu, get_model
from specsched.price.knobs import shipped_knobs
from specsched.price.moe_verify import kernel_check, touched_experts, verify_expert_seconds
from specsched.spec_knobs import SpecKnobs
from validate.spec_cases import read_cases
from validate.spec_replay import engine_bands, step_parts, step_seconds

QWEN, H100 = get_model("Qwen/Qwen3-30B-A3B"), get_gpu("h100")
KNOBS = shipped_knobs("h100")
PINNED = SpecKnobs(op_s=10e-6, mask_eff=0.5, host_scale=1.0)


def test_touched_experts_and_the_verify_share():
    assert touched_experts(QWEN, 1) == pytest.approx(8.0)  # one token: its top-k
    t = touched_experts(QWEN, np.array([1, 4, 16, 64, 512]))
    assert np.all(np.diff(t) > 0) and t[-1] == pytest.approx(128.0, rel=1e-6)  # saturates at every expert
    # 4 tokens touch ≈ 29 of 128 experts: the 21 beyond the decode's 8, over 48 layers, at TP 2
    extra = verify_expert_seconds(QWEN, H100, KNOBS, 4, 1, tp=2)
    want = (touched_experts(QWEN, 4) - 8.0) * 48 * QWEN.expert_params * 2.0 / 2 / (KNOBS.eta_bw * H100.hbm_bw)
    assert extra == pytest.approx(want) and 1e-3 < extra < 2e-3
    assert verify_expert_seconds(QWEN, H100, KNOBS, 4, 1, tp=4) == pytest.approx(extra / 2)
    assert verify_expert_seconds(get_model("llama3.1-8b"), H100, KNOBS, 64, 1) == 0.0  # dense: nothing


def test_priced_growth_lies_between_measured_routings():
    """The uniform-routing price of the extra experts against vLLM's fused-MoE kernel measured by
    AIConfigurator (H100, Qwen3-30B-A3B layer): below the balanced (every pair a new expert) growth, and
    not far below the skewed (power-law) one — within 25 % of it at 4 tokens, where the kernel's small tiles
    read below the decode GEMMs' bandwidth."""
    rows = kernel_check()
    assert {r["tp"] for r in rows} == {2, 4} and len(rows) == 10
    for r in rows:
        assert r["priced_us"] <= 1.1 * r["balanced_us"], r
        assert r["priced_us"] >= 0.75 * r["power_law_us"], r


def _case(case_id):
    cases = {c.case_id: c for f in ("validate/data/spec_train.csv", "validate/data/spec_check.csv")
             for c in read_cases(f)}  # fmt: skip
    return cases[case_id]


def test_step_parts_sum_to_the_step_and_name_the_moe_share():
    moe = _case("specforge339-b1-s3t1n4")
    parts = step_parts(moe, PINNED)
    ar, sp = step_seconds(moe, PINNED)
    assert ar == pytest.approx(sum(parts["ar"].values()))
    assert sp == pytest.approx(sum(v for k, v in parts["spec"].items() if k != "verify_moe"))
    s = parts["spec"]
    names = {"draft", "draft_host", "reject", "verify_forward", "verify_moe", "verify_kv", "draft_kv", "host"}
    assert set(s) == names
    # the named MoE share sits inside the verify's step growth over the decode step
    assert 0 < s["verify_moe"] < s["verify_forward"] - parts["ar"]["forward"] + 1e-9
    dense = step_parts(_case("eagle3-t3-b8"), PINNED)["spec"]
    assert dense["verify_moe"] == 0.0 and dense["draft"] > 0 and dense["draft_host"] > 0


def test_a_trees_draft_extend_runs_over_the_accepted_tokens():
    """SGLang's draft extend after verify runs over ≤ steps + 1 tokens a request, not the tree's nodes: a
    tree and the chain of its steps pay the same draft passes; the tree's rejection covers its nodes."""
    tree = _case("sdb-sglang-qwen3-8b-gsm8k-tree21-b1")
    chain = replace(tree, tree_nodes=None)
    t, c = step_parts(tree, PINNED)["spec"], step_parts(chain, PINNED)["spec"]
    assert t["draft"] == pytest.approx(c["draft"])
    assert t["reject"] == pytest.approx(c["reject"] * tree.tree_nodes / 3)  # 20 nodes (k = 21 with the root)
    assert t["verify_forward"] > c["verify_forward"]


def _row(engine, split, err, sp=1.5, measured=1.4):
    return {"case": f"{engine}-{split}-{err}", "engine": engine, "split": split, "error_pct": err,
            "headline": "speedup", "headline_predicted": sp, "headline_measured": measured}  # fmt: skip


def test_engine_bands_per_version_and_family():
    rows = [_row("sglang-0.4", "train", 10.0), _row("sglang-0.4", "train", -4.0),
            _row("sglang-0.5", "check", 30.0, sp=1.2, measured=0.8), _row("trtllm", "check", -20.0),
            {"case": "x", "engine": "vllm-0.9", "split": "check", "skipped": "why"}]  # fmt: skip
    held = [_row("sglang-0.4", "train", 12.0), _row("sglang-0.4", "train", 2.0)]
    bands = engine_bands(rows, held)
    assert set(bands) == {"sglang-0.4", "sglang-0.5", "trtllm", "sglang-*"}  # no modelled vllm row
    b = bands["sglang-0.4"]
    assert (b["train_median_pct"], b["train_worst_pct"], b["train_cases"]) == (7.0, 10.0, 2)
    assert (b["loso_median_pct"], b["loso_worst_pct"]) == (7.0, 12.0) and "check_median_pct" not in b
    assert (bands["sglang-0.5"]["sign_right"], bands["sglang-0.5"]["sign_cases"]) == (0, 1)
    fam = bands["sglang-*"]
    assert fam["train_cases"] == 2 and fam["check_cases"] == 1 and fam["sign_cases"] == 3


def test_engine_band_quotes_the_version_else_its_family(monkeypatch):
    by = {"sglang-0.4": {"check_median_pct": 30.0}, "vllm-*": {"check_median_pct": 19.0}}
    monkeypatch.setattr(spec_knobs, "shipped_band", lambda: {"by_engine": by})
    assert spec_knobs.engine_band("sglang-0.4") == {"of": "sglang-0.4", "check_median_pct": 30.0}
    assert spec_knobs.engine_band("vllm-0.15") == {"of": "vllm-*", "check_median_pct": 19.0}
    assert spec_knobs.engine_band("trtllm") == {}
    monkeypatch.setattr(spec_knobs, "shipped_band", lambda: {})
    assert spec_knobs.engine_band("sglang-0.4") == {}


def test_a_runs_summary_carries_its_engine_versions_band(monkeypatch):
    import sim.deploy.draft as draft
    from sim.config_io import load_config

    by = {"sglang-0.4": {"train_median_pct": 10.0, "check_median_pct": 36.9, "check_cases": 1}}
    band = {"engines": ["sglang-0.4"], "by_engine": by}
    monkeypatch.setattr(spec_knobs, "shipped_band", lambda: band)
    monkeypatch.setattr(draft, "shipped_band", lambda: band)
    keys = ["cost.model=llama3.1-8b", "cost.gpu=h100", "drafter.name=eagle3", "drafter.model=eagle3",
            "drafter.gamma=3", "drafter.engine=sglang-0.4"]  # fmt: skip
    cfg = load_config(None, keys)
    out = draft.accuracy(cfg)
    assert out["accuracy_spec_engine"] == "sglang-0.4" and out["accuracy_spec_engine_validated"]
    assert out["accuracy_spec_engine_of"] == "sglang-0.4"
    assert out["accuracy_spec_engine_check_median_pct"] == 36.9


def test_bands_split_by_tensor_parallel_class_and_a_run_quotes_its_own(monkeypatch):
    rows = [{**_row("sglang-0.5", "train", 6.0), "tp": 1},
            {**_row("sglang-0.5", "check", 40.0, sp=1.2, measured=0.8), "tp": 2},
            {**_row("sglang-0.5", "check", 20.0), "tp": 4}]  # fmt: skip
    b = engine_bands(rows)["sglang-0.5"]
    assert b["tp"]["1"]["train_cases"] == 1 and "check_median_pct" not in b["tp"]["1"]
    assert (b["tp"][">1"]["check_median_pct"], b["tp"][">1"]["sign_right"]) == (30.0, 1)
    monkeypatch.setattr(spec_knobs, "shipped_band", lambda: {"by_engine": {"sglang-*": b}})
    one, many = spec_knobs.engine_band("sglang-0.4", 1), spec_knobs.engine_band("sglang-0.4", 8)
    assert one["of"] == "sglang-*" and one["tp_class"] == "1" and one["tp_train_median_pct"] == 6.0
    assert many["tp_class"] == ">1" and many["tp_check_worst_pct"] == 40.0
    assert "tp_train_median_pct" not in many
    assert "tp" not in spec_knobs.engine_band("sglang-0.4") and "tp_class" not in spec_knobs.engine_band("x")
