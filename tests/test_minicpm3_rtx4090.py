"""The RTX 4090 row (AD102: the L40S's measured kernel efficiencies, its own peaks) and the MiniCPM3-4B row
priced as vLLM 0.10's `minicpm3.py` runs it (MHA over 40 heads × 96, v padded; MLA-shaped projections), and
the two check cases of vLLM PR #24243 they make replayable."""

from __future__ import annotations

import numpy as np
import pytest

from specsched.kernels.figures import efficiency_caps, gpu_figures, load
from specsched.price import GPUS, get_gpu, get_model
from specsched.price.draft_shape import drafter_shape
from specsched.price.gpus import SAME_DIE
from specsched.price.knobs import shipped_knobs
from specsched.spec_knobs import SpecKnobs
from validate.spec_cases import _gpu_key, read_cases
from validate.spec_replay import replay, unmodelled

CHECK = "validate/data/spec_check.csv"
CASES = ("vllm24243-c10", "vllm24243-c1")

# hand-computed from config.json and vllm/model_executor/models/minicpm3.py (0.10.1.1)
H, L, I, V = 2560, 62, 6400, 73448
HEADS, QK_NOPE, QK_ROPE, V_HEAD, Q_LORA, KV_LORA = 40, 64, 32, 64, 768, 256
QK_HEAD = QK_NOPE + QK_ROPE  # 96: the head size vLLM's Attention is built with, v padded to it
ATTN = H * Q_LORA + Q_LORA * HEADS * QK_HEAD + H * (KV_LORA + QK_ROPE) + KV_LORA * HEADS * (QK_NOPE + V_HEAD)
ATTN += HEADS * V_HEAD * H  # o_proj
NORMS = Q_LORA + KV_LORA + 2 * H  # q_a / kv_a layernorms, input / post-attention norms
PARAMS = L * (ATTN + NORMS + 3 * H * I) + V * H + H  # tied embeddings, final norm


def test_rtx4090_row_and_resolution():
    g = get_gpu("rtx4090")
    assert (g.hbm_bw, g.flops, g.memory, g.sms, g.sm_clock) == (1.008e12, 165.2e12, 24e9, 128, 2.52e9)
    assert g.link == "pcie4-x16" and g.visible_memory == 24564 * 2**20 and "whitepaper" in g.source
    assert get_gpu("GeForce-RTX-4090") is g and _gpu_key("RTX4090") == "rtx4090" and "rtx4090" in GPUS


def test_rtx4090_takes_the_l40s_efficiencies_with_its_own_peaks():
    assert SAME_DIE["rtx4090"] == "l40s"
    figs = load()
    assert "rtx4090" not in figs  # no kernel tables of its own
    assert gpu_figures("rtx4090", figs) == gpu_figures("l40s", figs)
    assert efficiency_caps("rtx4090", figs) == efficiency_caps("l40s", figs)
    k, k_l40s = shipped_knobs("rtx4090"), shipped_knobs("l40s")
    assert (k.eta_bw, k.eta_f, k.eta_kv) == (k_l40s.eta_bw, k_l40s.eta_f, k_l40s.eta_kv)


def test_minicpm3_row_is_what_vllm_stores_and_reads():
    m = get_model("openbmb/MiniCPM3-4B")
    assert m.name == "minicpm3-4b" and not m.is_moe and m.filtered_sampling
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim) == (L, H, HEADS, HEADS, QK_HEAD)
    assert (m.intermediate, m.vocab) == (I, V)
    # KV: k (nope ‖ rope) and v padded to 96 for all 40 heads, bf16 — not MLA's 256 + 32 latent
    assert m.kv_bytes_per_token == 2 * L * HEADS * QK_HEAD * 2 == 952_320
    assert m.kv_bytes_per_gpu(1) == m.kv_bytes_per_token
    assert m.layer_attn_params == ATTN == 13_516_800
    assert m.total_params == m.active_params == pytest.approx(PARAMS, rel=1e-4)  # 4.0739e9
    assert 2 * PARAMS / 1e9 == pytest.approx(8.15, abs=0.005)  # the bf16 checkpoint's 8.15 GB
    assert m.weight_params_read(np.array([1.0, 70.0])).tolist() == [m.total_params] * 2


def test_gqa_rows_keep_their_projection_count():
    m = get_model("llama3.1-8b")
    assert m.layer_attn_params == 4096 * (4096 + 2 * 1024) + 4096 * 4096


def test_eagle3_head_for_minicpm3_is_target_shaped():
    d = drafter_shape("eagle3", get_model("minicpm3-4b"))
    assert (d.hidden, d.intermediate, d.heads, d.kv_heads, d.head_dim) == (H, I, HEADS, HEADS, QK_HEAD)
    assert d.own_head and d.vocab == 32000 and d.fc_in == 3


def test_pr24243_cases_replay_to_a_finite_prediction():
    cases = [c for c in read_cases(CHECK) if c.case_id in CASES]
    assert [c.case_id for c in cases] == list(CASES)
    assert all(c.gpu == "rtx4090" and unmodelled(c) == "" for c in cases)
    rows = replay(cases, SpecKnobs())
    assert all("skipped" not in r and np.isfinite(r["predicted"]) and r["predicted"] > 1.0 for r in rows)


def test_same_die_gpus_take_their_siblings_fp8_rate_and_streaming_figures():
    from specsched.kernels.figures import fp8_rate
    from specsched.price import get_gpu
    from specsched.price.tokens import stream_bw

    assert (fp8_rate("rtx4090"), fp8_rate("a100-40gb"), fp8_rate("h800")) == (2.0, 1.0, 2.0)
    l40s, rtx = get_gpu("l40s"), get_gpu("rtx4090")
    assert stream_bw(rtx) / rtx.hbm_bw == pytest.approx(stream_bw(l40s) / l40s.hbm_bw)  # measured, not 0.85
