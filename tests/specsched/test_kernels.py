"""Kernel forms, the shipped per-GPU figures, the GPU rule built on them, FP8, prefill parts (tiny, fast)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specbed.cli import main as specbed
from specsched import fit as F
from specsched.io.errors import InputError
from specsched.kernels import (
    carry_knobs,
    forms,
    fp8_knobs,
    fp8_quant_seconds,
    fp8_rate,
    kernel_caps,
    kv_bytes_factor,
    prefill_parts,
)
from specsched.kernels import figures as KF
from specsched.kernels.tables import sheet
from specsched.measured import Points
from tests.specsched.test_fit import SPLITWISE

GEMM = {"L": 4e-6, "eta_bw": 0.85, "eta_f": 0.75}


def _gemm_rows(gpu: str, fig: dict) -> forms.Shapes:
    """Decode-shaped and large GEMMs on `gpu`, timed by the form itself."""
    m, n, k = np.meshgrid([1.0, 8.0, 1024.0, 4096.0], [1024.0, 8192.0], [2048.0, 8192.0], indexing="ij")
    m, n, k = m.ravel(), n.ravel(), k.ravel()
    sh = sheet(gpu)
    s = forms.Shapes(2 * (m * k + k * n + m * n), 2 * m * n * k, sh.bw, sh.flops)
    return forms.Shapes(s.bytes, s.flops, s.bw, s.peak, forms.predict("gemm", fig, s))


def test_gemm_fit_recovers_its_figures():
    got = forms.fit("gemm", _gemm_rows("h100", GEMM))
    for key, want in GEMM.items():
        assert got[key] == pytest.approx(want, rel=0.01), key


def test_leave_one_gpu_out_carries_fixed_time_by_clock_and_keeps_efficiencies():
    sheets = {g: sheet(g) for g in ("h100", "a100", "b200")}
    data = {}
    for g, sh in sheets.items():  # same efficiencies, a fixed time of the same cycles on every GPU
        data[g] = _gemm_rows(g, dict(GEMM, L=GEMM["L"] * sheets["h100"].clock / sh.clock))
    res = forms.leave_one_out("gemm", data, sheets)
    for g, r in res.items():
        assert r["logo_mape"] < 1.0 and r["in_mape"] < 1.0, g


def test_shipped_figures_cover_every_catalogue_gpu_with_physical_values():
    figs = KF.load()
    assert set(figs) == {"a100", "h100", "h200", "l40s", "b200"}
    for per in figs.values():
        assert 0 < per["gemm"]["eta_bw"] <= 1 and 0 < per["gemm"]["eta_f"] <= 1
        assert 1e-7 < per["floor"] < 1e-4


def test_malformed_figures_file_is_one_input_error(tmp_path):
    bad = tmp_path / "k.json"
    doc = json.loads(KF.FILE.read_text())
    doc["gpus"]["h100"]["gemm"]["eta_bw"] = 3.0
    bad.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="h100.gemm.eta_bw"):
        KF.load(bad)


def test_gpu_rule_kernels_and_clock():
    knobs = {"eta_bw": 0.9, "eta_f": 0.6, "eta_kv": 0.8, "c0": 20e-6, "c_token": 5e-7, "frontend_s": 8e-3}
    assert carry_knobs(knobs, "h100", "h100") == knobs
    r = KF.ratios("h100", "a100")
    caps = KF.efficiency_caps("a100")
    got = carry_knobs(knobs, "h100", "a100")
    # an efficiency carries as it is, capped by what the target's measured kernels reach
    assert got["eta_bw"] == pytest.approx(min(0.9, caps["eta_bw"])) and got["c0"] == pytest.approx(
        20e-6 * r["fixed"]
    )
    assert got["eta_f"] == 0.6 and got["eta_kv"] == pytest.approx(min(0.8, caps["eta_kv"]))
    assert got["frontend_s"] == 8e-3  # host side unchanged
    # measured: A100's decode-shaped GEMMs reach less of its HBM than H100's, its tiny kernels take longer
    assert got["eta_bw"] < 0.9 and got["c0"] > 20e-6
    # a stack below the target's kernels keeps its own share (Splitwise: ≈ 0.78 on H100 and A100)
    assert carry_knobs({"eta_bw": 0.7}, "h100", "a100")["eta_bw"] == 0.7
    clock = carry_knobs(knobs, "h100", "a100", rule="clock")
    assert clock["eta_bw"] == 0.9 and clock["c0"] == pytest.approx(20e-6 * 1.98 / 1.41)
    assert all(v <= 1 for k, v in carry_knobs({"eta_bw": 1.0}, "a100", "h100").items())
    with pytest.raises(InputError, match="rule"):
        carry_knobs(knobs, "h100", "a100", rule="nope")


def test_cost_fit_bounds_come_from_the_gpus_kernels():
    caps = kernel_caps("h100")
    b = F.bounds("h100")
    assert b["eta_f"][1] == pytest.approx(caps["eta_f"]) and caps["eta_f"] < 1.0
    assert b["link_bw"][1] == pytest.approx(caps["link_bw"])


def test_eager_floor_prices_small_prefills_only():
    pts = Points(
        np.array(["prefill", "prefill", "decode"]),
        np.array([8, 8, 8]),
        np.array([1, 1, 1]),
        np.array([128, 8192, 1]),
        np.array([128.0, 8192.0, 512.0]),
        np.ones(3),
        np.array(["a", "b", "c"]),
    )
    knobs = {"c0": 40e-6, "eta_bw": 0.8, "eta_f": 0.6, "link_bw": 80e9, "hop_latency": 0.0}
    plain = F.predict(pts, "llama2-70b", "h100", knobs)
    floor = F.predict(pts, "llama2-70b", "h100", dict(knobs, eager_s=6e-4))
    assert floor[0] == pytest.approx(80 * 6e-4) and floor[0] > plain[0]
    assert floor[1] == plain[1] and floor[2] == plain[2]


def test_cost_check_on_another_gpu_carries_by_the_rule(tmp_path, capsys):
    out = tmp_path / "fit.json"
    F.Fit("llama2-70b", "h100", {"c0": 90e-6, "eta_bw": 0.8, "eta_f": 0.6, "link_bw": 80e9}).save(out)
    base = ["cost", "check", str(SPLITWISE), "--fit", str(out), "--where", "tensor_parallel=8"]
    runs = {}
    for rule in ("kernels", "clock"):
        capsys.readouterr()
        assert specbed([*base, "--gpu", "a100", "--gpu-rule", rule, "--json", "-"]) == 0
        runs[rule] = json.loads(capsys.readouterr().out)
    assert runs["kernels"]["decode"]["mape_pct"] != runs["clock"]["decode"]["mape_pct"]
    assert specbed([*base, "--gpu", "a100"]) == 0
    assert "kernels GPU rule" in capsys.readouterr().out


def test_prefill_parts_shard_with_tp_and_all_reduce_does_not():
    one = prefill_parts("llama2-70b", "h100", 8192, tp=1)
    eight = prefill_parts("llama2-70b", "h100", 8192, tp=8)
    assert one["allreduce"] == 0 and eight["allreduce"] > 0
    assert eight["gemm"] == pytest.approx(one["gemm"] / 8, rel=0.05)  # compute-bound: shards
    assert eight["attention"] < one["attention"] / 4
    two = prefill_parts("llama2-70b", "h100", 8192, tp=2)
    assert eight["allreduce"] > two["allreduce"]  # 2(n−1)/n of the activations per GPU: grows with n


def test_fp8_per_gpu():
    assert fp8_rate("a100") == 1.0 and fp8_rate("h100") == 2.0
    assert kv_bytes_factor("fp8_e4m3") == 0.5 and kv_bytes_factor(None) == 1.0
    # measured: Hopper's FP8-cache decode attention saves less than half (it dequantizes as it reads)
    assert 0.5 < kv_bytes_factor("fp8", "h100") < 1.0 and kv_bytes_factor("fp8", "a100") == 0.5
    knobs = {"eta_bw": 0.9, "eta_f": 0.6}
    assert fp8_knobs(knobs, "a100") == knobs  # no FP8 GEMMs measured: W8A16, unchanged
    assert fp8_knobs(knobs, "h100") != knobs and all(0 < v <= 1 for v in fp8_knobs(knobs, "h100").values())
    assert float(fp8_quant_seconds("llama2-70b", "a100", 1024)) == 0.0
    assert float(fp8_quant_seconds("llama2-70b", "h100", 1024, tp=8)) > 0.0
    fp8 = prefill_parts("llama3.1-70b", "b200", 8192, tp=8, fp8=True)
    assert fp8["gemm"] < prefill_parts("llama3.1-70b", "b200", 8192, tp=8)["gemm"] * 1.5
    with pytest.raises(InputError, match="FP8"):
        prefill_parts("llama2-70b", "a100", 512, fp8=True)


def test_allreduce_seconds_is_zero_at_tp1_and_per_token_beyond_its_latency():
    from specsched.kernels import allreduce_seconds

    tok = np.array([1.0, 4096.0, 8192.0])
    assert not allreduce_seconds("llama2-70b", "h100", tok, tp=1).any()
    t8 = allreduce_seconds("llama2-70b", "h100", tok, tp=8)
    assert t8[2] - t8[1] == pytest.approx((t8[1] - t8[0]) * 4096 / 4095, rel=1e-6)  # linear in tokens
    assert t8[0] > 0  # two latencies a layer


def test_fp8_terms_bundle_what_the_step_needs():
    from specsched.kernels import fp8_terms

    got = fp8_terms(
        {"eta_bw": 0.9, "eta_f": 0.6}, "llama3.1-70b", "a100", np.array([8.0]), kv_cache_dtype="fp8"
    )
    assert got["peak_factor"] == 1.0 and got["kv_factor"] == 0.5 and got["quant_seconds"][0] == 0.0
    h = fp8_terms({"eta_bw": 0.9, "eta_f": 0.6}, "llama3.1-70b", "h100", np.array([8.0]), tp=4)
    assert h["peak_factor"] == 2.0 and h["quant_seconds"][0] > 0 and h["kv_factor"] == 1.0


def test_a_same_die_sibling_takes_the_measured_gpus_efficiencies_with_its_own_peaks():
    """A100 40GB (no kernel tables) prices with A100 80GB's measured efficiencies; its slower HBM2 shows in
    the decode step, not in the efficiency (specsched.price.gpus.SAME_DIE)."""
    from specsched.price.gpus import SAME_DIE
    from specsched.price.knobs import shipped_knobs
    from specsched.price.vllm import VllmSpec, step_parts

    assert SAME_DIE["a100-40gb"] == "a100"
    k40, k80 = shipped_knobs("a100-40gb"), shipped_knobs("a100")
    assert (k40.eta_bw, k40.eta_f, k40.eta_kv) == (k80.eta_bw, k80.eta_f, k80.eta_kv)
    b = np.array([1.0])
    t40 = step_parts(VllmSpec("llama3.1-8b", gpu="a100-40gb"), k40, b)["weights_or_compute"][0]
    t80 = step_parts(VllmSpec("llama3.1-8b", gpu="a100"), k80, b)["weights_or_compute"][0]
    assert t40 / t80 == pytest.approx(2.039 / 1.555, rel=0.02)
