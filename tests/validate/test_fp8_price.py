"""FP8 priced per GPU (issue 33 item 4): FP8 weights at the GPU's measured FP8 rate and figures, the
activation-scaling pass, and `kv_cache_dtype` fp8 (twice the KV tokens, the measured KV time ratio)."""

import numpy as np
import pytest

from sim.config_io import load_config
from sim.deploy.cost import config_spec
from specsched import kernels
from specsched.io.errors import InputError
from specsched.price import tokens
from specsched.price.knobs import shipped_knobs
from specsched.price.vllm import VllmSpec, cost_table, step_parts

B = np.array([1.0, 64.0, 512.0, 4096.0])


def _step(spec: VllmSpec, gpu: str) -> np.ndarray:
    return sum(step_parts(spec, shipped_knobs(gpu), B).values())


def test_bf16_price_does_not_touch_the_fp8_terms():
    spec = VllmSpec("llama3.1-8b", "h100", precision="bf16")
    parts = step_parts(spec, shipped_knobs("h100"), B)
    assert np.all(np.isfinite(parts["weights_or_compute"]))


@pytest.mark.parametrize("gpu", ["h100", "a100"])
def test_fp8_weights_decode_faster_than_bf16(gpu):
    bf16 = _step(VllmSpec("llama3.1-8b", gpu, precision="bf16"), gpu)
    fp8 = _step(VllmSpec("llama3.1-8b", gpu, precision="fp8"), gpu)
    # a one-token step streams the weights: half the bytes, well under the BF16 step
    assert fp8[0] < 0.75 * bf16[0]


def test_fp8_on_a100_runs_w8a16_at_the_bf16_rate():
    assert kernels.fp8_rate("a100") == 1.0
    assert kernels.fp8_rate("h100") == 2.0
    # A100 has no FP8 GEMM rows: knobs unchanged, no scaling pass; its compute-bound step is BF16's
    spec = VllmSpec("llama3.1-8b", "a100", precision="fp8")
    parts = step_parts(spec, shipped_knobs("a100"), np.array([8192.0]))
    bf16 = VllmSpec("llama3.1-8b", "a100", precision="bf16")
    bf16 = step_parts(bf16, shipped_knobs("a100"), np.array([8192.0]))
    # (within the GEMM knee's p-norm, where the smaller FP8 weight read still shows: < 1 %)
    assert parts["weights_or_compute"][0] == pytest.approx(bf16["weights_or_compute"][0], rel=0.01)


def test_fp8_scaling_pass_is_priced_on_hopper_with_an_fp8_cache():
    quant = kernels.fp8_quant_seconds("llama3.1-8b", "h100", B)
    assert np.all(quant > 0) and np.all(np.diff(quant) > 0)
    k = shipped_knobs("h100")
    auto = step_parts(VllmSpec("llama3.1-8b", "h100", precision="fp8"), k, B)["weights_or_compute"]
    fp8 = VllmSpec("llama3.1-8b", "h100", precision="fp8", kv_cache_dtype="fp8")
    measured = step_parts(fp8, k, B)["weights_or_compute"]
    # the measured FP8 terms apply only with an FP8 cache (auto keeps the calibrated knobs)
    assert not np.allclose(auto, measured)
    assert measured[-1] > auto[-1]  # a large step pays the scaling pass


def test_auto_keeps_the_calibrated_h100_price():
    # on H100 the FP8 rate is the flat 2 the calibration was fitted with: auto prices as before
    spec = VllmSpec("llama3.1-8b", "h100", precision="fp8")
    parts = step_parts(spec, shipped_knobs("h100"), B)["weights_or_compute"]
    g, m = spec.resolve()[1], spec.resolve()[0]
    k = shipped_knobs("h100")
    # one byte a weight (plus the GEMMs' activations) at the calibrated eta_bw, then the kernels between
    # the GEMMs, FP8 activation quantization included (`specsched.price.tokens`)
    read = m.shape(1.0).weight_params_read(B[:1]) + tokens.gemm_io_bytes(m, 1, B[:1])
    between = tokens.elementwise_bytes(m, 1, B[:1], fp8=True) / tokens.stream_bw(g)
    row = k.c_token * m.layers  # one sampled row through each layer
    # (the GEMM knee's p-norm adds the one token's compute: a millionth)
    assert parts[0] == pytest.approx(read[0] / (k.eta_bw * g.hbm_bw) + row + between[0], rel=1e-6)


def test_fp8_kv_cache_doubles_capacity_and_reads_in_the_measured_ratio():
    auto = VllmSpec("llama3.1-8b", "h100", precision="fp8")
    fp8 = VllmSpec("llama3.1-8b", "h100", precision="fp8", kv_cache_dtype="fp8")
    assert fp8.kv_capacity() == pytest.approx(2 * auto.kv_capacity(), rel=1e-3)
    k = shipped_knobs("h100")
    ratio = cost_table(fp8, k).kv_token_seconds / cost_table(auto, k).kv_token_seconds
    assert ratio == pytest.approx(kernels.kv_bytes_factor("fp8", "h100"))
    assert 0.5 <= ratio < 1.0


def test_kv_cache_dtype_key_reaches_the_spec_and_is_checked():
    cfg = load_config(None, ["cost.model=llama3.1-8b", "cost.kv_cache_dtype=fp8_e4m3"])
    assert config_spec(cfg.server).kv_cache_dtype == "fp8_e4m3"
    with pytest.raises(InputError, match="kv_cache_dtype"):
        load_config(None, ["cost.model=llama3.1-8b", "cost.kv_cache_dtype=int8"])
    with pytest.raises(InputError, match="kv_cache_dtype"):
        load_config(None, ["cost.kv_cache_dtype=fp8"])
