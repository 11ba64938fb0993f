"""Issue 33 item 5: the "row" per-token form of the vLLM step price holds across B, TP and precision.

The per-token work is physical (`specsched.price.tokens`): it shards with TP where the work does, roughly
halves with FP8 weights on a GPU with an FP8 tensor rate, gives way to compute once the step is
compute-bound, grows with B; c_token is a running request's row, not a prompt's tokens; prefill attention
is quadratic in a prompt and priced per query-key pair by the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from specsched.cost import CostTable
from specsched.price import tokens
from specsched.price.gpus import get_gpu
from specsched.price.knobs import Knobs
from specsched.price.models import get_model
from specsched.price.vllm import VllmSpec, cost_table, memory_compute, step_parts, token_units
from specsched.stepcost import PARTS, StepCost, StepShape, prefill_pairs

KNOBS = Knobs(eta_bw=0.88, eta_f=0.78, c0=20e-6, c_token=0.43e-6, link_latency=10e-6)
B = np.array([1.0, 16.0, 64.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0])


def core(model: str, tp: int, precision: str = "bf16", gpu: str = "h100") -> np.ndarray:
    spec = VllmSpec(model=model, gpu=gpu, tp=tp, precision=precision)
    return step_parts(spec, KNOBS, B)["weights_or_compute"]


def test_monotone_in_tokens_at_every_tp_and_precision():
    for tp in (1, 2, 4, 8):
        for precision in ("bf16", "fp8"):
            t = core("llama3.1-70b", tp, precision)
            assert np.all(np.diff(t) > 0), (tp, precision)


def test_prefill_shards_with_tp_and_the_all_reduce_does_not():
    one, eight = core("llama3.1-70b", 1), core("llama3.1-70b", 8)
    # a long prefill is compute-bound: the GEMM work splits 8 ways, the all-reduce bytes do not
    cmp1, cmp8 = (memory_compute(VllmSpec(model="llama3.1-70b", tp=tp), KNOBS, B)[1] for tp in (1, 8))
    assert cmp1 == pytest.approx(8 * cmp8)
    assert 4.0 < one[-1] / eight[-1] < 8.0
    m, g = get_model("llama3.1-70b"), get_gpu("h100")
    ar = tokens.allreduce_bytes_seconds(m, g, 8, B)
    assert ar[-1] > 0 and np.all(tokens.allreduce_bytes_seconds(m, g, 1, B) == 0)
    assert ar[-1] == pytest.approx(tokens.allreduce_bytes_seconds(m, g, 4, B)[-1] * (7 / 8) / (3 / 4))
    # kernels between the GEMMs: the norms' hidden-wide bytes do not shard, the MLP's do
    e1, e8 = (tokens.elementwise_bytes(m, tp, 8192.0) for tp in (1, 8))
    assert e1 / 8 < e8 < e1


def test_fp8_roughly_halves_a_compute_bound_prefill_on_hopper_not_on_a100():
    bf16, fp8 = core("llama3.1-70b", 8), core("llama3.1-70b", 8, "fp8")
    assert 0.5 < fp8[-1] / bf16[-1] < 0.9  # GEMMs at 2×, the all-reduce and elementwise bytes unchanged
    spec = VllmSpec(model="llama3.1-70b", tp=1, precision="fp8")
    t_mem, t_cmp = memory_compute(spec, KNOBS, B)
    spec16 = VllmSpec(model="llama3.1-70b", tp=1)
    m16, c16 = memory_compute(spec16, KNOBS, B)
    assert t_cmp[-1] == pytest.approx(c16[-1] / 2) and t_mem[0] < 0.6 * m16[0]
    a100 = memory_compute(VllmSpec(model="llama3.1-8b", gpu="a100", precision="fp8"), KNOBS, B)[1]
    a100_16 = memory_compute(VllmSpec(model="llama3.1-8b", gpu="a100"), KNOBS, B)[1]
    assert a100[-1] == pytest.approx(a100_16[-1])  # W8A16: no FP8 tensor rate on Ampere


def test_gives_way_to_compute_and_c_token_is_per_sampled_row():
    spec = VllmSpec(model="llama3.1-8b")
    t_mem, t_cmp = memory_compute(spec, KNOBS, B)
    assert t_mem[0] > t_cmp[0] and t_cmp[-1] > t_mem[-1]  # decode memory-bound, long prefill compute-bound
    # the knee sits where the roofline puts it: a few hundred tokens for BF16 on an H100
    knee = B[np.argmax(t_cmp > t_mem)]
    assert 128 <= knee <= 512
    # c_token: a sampled row through each layer (≤ max_num_seqs rows a step), never a prompt's every token
    assert token_units(spec, B) == pytest.approx(32 * np.minimum(B, 256))
    with_c = step_parts(spec, KNOBS, B)["weights_or_compute"]
    without = step_parts(spec, Knobs(eta_bw=0.88, eta_f=0.78, c0=20e-6), B)["weights_or_compute"]
    # decode rows pay it (through the GEMM knee's p-norm: nearly all of it while memory-bound)
    assert with_c[:2] - without[:2] == pytest.approx(KNOBS.c_token * 32 * B[:2], rel=0.02)
    assert with_c[-1] == pytest.approx(without[-1], rel=0.01)  # a compute-bound prefill hardly does
    assert cost_table(spec, KNOBS).request_seconds == 0.0


def test_the_projections_flops_not_two_per_parameter():
    m = get_model("llama3.1-8b")
    # embedding gather and LM head (sampled rows only) are not per-token GEMMs
    assert tokens.matmul_params(m) == pytest.approx(6.98e9, rel=0.01)
    assert tokens.lm_head_params(m) == 128256 * 4096


def test_prefill_attention_is_quadratic_and_priced_per_pair():
    assert tokens.attention_pairs(4) == 10 and tokens.attention_pairs(2, done=3) == 2 * 3 + 3
    # the replica's count (chunks after their prompts' cached or prefilled tokens) is the same sum
    assert prefill_pairs(np.array([4, 2]), np.array([0, 3])) == 10 + 9
    m, g = get_model("llama3.1-70b"), get_gpu("h100")
    one = tokens.prefill_attention_seconds(m, g, 8, tokens.attention_pairs(8192))
    eight = tokens.prefill_attention_seconds(m, g, 8, 8 * tokens.attention_pairs(1024))
    assert one / eight == pytest.approx(tokens.attention_pairs(8192) / (8 * tokens.attention_pairs(1024)))
    # heads split over TP: the attention shards
    assert tokens.prefill_attention_seconds(m, g, 1, 1e6) == pytest.approx(
        8 * tokens.prefill_attention_seconds(m, g, 8, 1e6)
    )
    # a short prompt at high TP keeps fewer SMs busy: slower per pair
    assert tokens.prefill_attention_seconds(m, g, 8, 1e6, prompt=256) > tokens.prefill_attention_seconds(
        m, g, 8, 1e6, prompt=8192
    )
    table = cost_table(VllmSpec(model="llama3.1-70b", tp=8), KNOBS)
    assert table.attn_pair_seconds == pytest.approx(float(tokens.prefill_attention_seconds(m, g, 8, 1.0)))


def test_step_bill_charges_the_pairs_last_and_leaves_other_steps_bit_identical():
    table = CostTable.from_points([1, 8192], [0.01, 0.2], mode="linear", attn_pair_seconds=1e-9)
    plain = CostTable.from_points([1, 8192], [0.01, 0.2], mode="linear")
    lat = np.asarray(table.latency(np.arange(8193)), dtype=np.float64)
    priced, bare = (StepCost(cost=t, draft_s=np.zeros(8), latency=lat) for t in (table, plain))
    shape = StepShape(1, 0, 4096, 0, pairs=int(tokens.attention_pairs(4096)))
    got = priced.bill(shape)
    assert PARTS[-1] == "attention" and got.attention == pytest.approx(1e-9 * 4096 * 4097 / 2)
    assert got.seconds == pytest.approx(bare.bill(shape).seconds + got.attention)
    decode = StepShape(4, 4, 4, 4)
    assert priced.bill(decode).seconds == bare.bill(decode).seconds  # no pairs: nothing added


def test_the_gemm_knee_is_a_p_norm_fitted_per_gpu():
    a, b = np.array([1.0, 1.0, 2.0, 0.0]), np.array([0.0, 1.0, 1.0, 0.0])
    for gpu in ("a100", "h100", "h200", "b200"):
        p = tokens.knee(get_gpu(gpu))
        assert 1.0 < p <= 8.0
        got = tokens.smooth_max(a, b, p)
        assert np.all(got >= np.maximum(a, b)) and np.all(got <= 2 ** (1 / p) * np.maximum(a, b) + 1e-15)
        assert got[1] == pytest.approx(2 ** (1 / p)) and got[3] == 0.0  # the knee itself: both bind
    assert tokens.smooth_max(a, b, 1e3) == pytest.approx(np.maximum(a, b), rel=1e-2)
