"""KV sizing, the catalogue, inference-perf traffic and a vLLM deployment's run."""

import numpy as np
import pytest

from sim.deploy.prepare import prepare
from sim.inference_perf import Profile, generate
from sim.metrics import request_table
from sim.wiring import run_pool
from specsched.io.errors import InputError
from specsched.price import GPUS, MODELS, find_model, get_gpu, get_model
from specsched.price.knobs import Knobs
from specsched.price.kv import size_kv
from specsched.price.vllm import VllmSpec, cost_table


def test_catalogue_knows_hf_ids_and_sources():
    assert find_model("meta-llama/Llama-3.1-70B-Instruct").name == "llama3.1-70b"
    assert find_model("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic").bytes_per_param == 1.0
    assert all(m.source for m in MODELS.values()) and all(g.source for g in GPUS.values())
    assert {"h100", "a100", "l40s", "h200", "b200"} <= set(GPUS)
    assert get_gpu("H100").key == "h100"
    with pytest.raises(InputError, match="unknown model"):
        get_model("acme/unknown-7b", field="cost.model")


def test_kv_sizing_follows_memory():
    m, g = get_model("llama2-7b"), get_gpu("h100")
    # 0.9 · 79.6 GiB − 12.6 GiB of weights − activations, at 512 KiB a token: about 118k tokens
    kv = size_kv(m, g, gpu_memory_utilization=0.9, max_num_batched_tokens=2048, max_num_seqs=128)
    assert 110_000 < kv.kv_tokens < 125_000 and kv.kv_tokens % 16 == 0
    more = size_kv(m, g, gpu_memory_utilization=0.95, max_num_batched_tokens=2048, max_num_seqs=128)
    tp2 = size_kv(m, g, tp=2, gpu_memory_utilization=0.9, max_num_batched_tokens=2048, max_num_seqs=128)
    assert more.kv_tokens > kv.kv_tokens and tp2.kv_tokens > 2 * kv.kv_tokens
    with pytest.raises(InputError, match="no KV cache"):
        size_kv(get_model("llama3.1-70b"), g, tp=1)


def test_step_cost_is_memory_bound_then_linear():
    spec = VllmSpec(model="qwen2.5-7b", max_num_seqs=128, max_num_batched_tokens=2048)
    t = cost_table(spec, Knobs())
    lat = t.latency(np.array([1, 8, 64, 4096]))
    assert lat[0] == pytest.approx(lat[1], rel=0.01) and lat[3] > 3 * lat[0]
    assert t.kv_token_seconds > 0


PROFILE = Profile("tiny", ((4.0, 20.0), (8.0, 10.0)), 2, 3, 100, 300, 32, 410.0, (400, 420))


def test_inference_perf_traffic():
    wl, keys = generate(PROFILE, seed=1)
    assert len(wl) == 160 and np.all(np.diff(wl.arrival_s) >= 0)
    assert wl.arrival_s[79] <= 20.0 + 1e-9 and wl.arrival_s[-1] == pytest.approx(30.0)
    assert np.all((wl.input_tokens >= 400) & (wl.input_tokens <= 420))
    # users cycle: request i and i + 6 are the same user, with the same prompt and blocks
    assert keys[0] == keys[6] and wl.input_tokens[0] == wl.input_tokens[6]
    groups = {tuple(k[:6]) for k in keys}  # 100-token system prompts: 6 shared blocks per group
    assert len(groups) == 2


def test_prefix_caching_cuts_ttft_and_reports_hits():
    wl, keys = generate(PROFILE, seed=0)
    out = {}
    for on in (True, False):
        spec = VllmSpec(model="qwen2.5-7b", max_num_seqs=32, max_num_batched_tokens=512, prefix_caching=on)
        rec = run_pool(prepare(spec, Knobs(), wl, keys))
        out[on] = (np.mean(request_table(rec, wl)["ttft_s"]), rec.prefix_cache_stats)
    assert out[True][0] < out[False][0]
    assert out[True][1]["hit_rate"] > 0.8 and out[False][1] is None


def test_async_scheduling_adds_a_step_to_ttft():
    wl, keys = generate(PROFILE, seed=0)
    ttft = {}
    for on in (True, False):
        spec = VllmSpec(model="qwen2.5-7b", max_num_seqs=32, max_num_batched_tokens=512, async_scheduling=on)
        rec = run_pool(prepare(spec, Knobs(), wl, keys))
        ttft[on] = float(np.mean(request_table(rec, wl)["ttft_s"]))
    assert ttft[True] > ttft[False]


def test_shipped_knobs_calibrated_for_h100_carried_to_other_gpus():
    from specsched.kernels import carry_knobs
    from specsched.kernels.figures import efficiency_caps, ratios
    from specsched.price.knobs import shipped_knobs, transferred_knobs

    h100, a100 = shipped_knobs("h100"), shipped_knobs("A100-80GB")
    assert h100.frontend_s > 0 and h100 != Knobs()
    # The GPU rule from measured kernels (specsched.kernels, issue 33): host terms unchanged, efficiencies
    # and fixed times by the two GPUs' measured kernel ratios; the same rule `cost check --gpu` applies.
    for name in ("step_s", "frontend_s"):
        assert getattr(a100, name) == getattr(h100, name)
    assert a100.as_dict() == pytest.approx(carry_knobs(h100.as_dict(), "h100", "a100"))
    r = ratios("h100", "a100")
    # an efficiency carries as it is, capped by the target's measured kernels (A100's decode GEMMs: 0.78)
    cap = efficiency_caps("a100")["eta_bw"]
    assert a100.eta_bw == pytest.approx(min(h100.eta_bw, cap)) and a100.eta_bw < h100.eta_bw
    assert a100.c0 == pytest.approx(h100.c0 * r["fixed"]) and a100.c0 > h100.c0
    l40s = shipped_knobs("l40s")  # PCIe: its measured small all-reduce is slower than NVLink's
    assert l40s.link_latency > h100.link_latency
    assert transferred_knobs(Knobs(), "h100", "h200") == Knobs()  # the clock rule, kept as `rule="clock"`
    assert carry_knobs(Knobs().as_dict(), "h100", "h200", rule="clock") == Knobs().as_dict()


def test_c_token_prices_each_token_while_memory_bound():
    from specsched.price.vllm import step_parts

    spec = VllmSpec("llama3.1-8b", max_num_seqs=64, max_num_batched_tokens=2048)
    b = np.array([1.0, 32.0, 2048.0])
    base = step_parts(spec, Knobs(), b, token_form="layer")["weights_or_compute"]
    more = step_parts(spec, Knobs(c_token=0.2e-6), b, token_form="layer")["weights_or_compute"]
    assert more[:2] - base[:2] == pytest.approx(32 * 0.2e-6 * b[:2])
    assert more[2] == pytest.approx(base[2])  # a 2048-token prefill is compute-bound either way


def test_filtered_default_sampling_costs_vocabulary_passes_per_wave_of_rows():
    from specsched.price.vllm import sampling_seconds, step_parts

    knobs = Knobs(c_vocab=5e-9)
    qwen = VllmSpec("qwen2.5-7b", max_num_seqs=256)
    nemo = VllmSpec("mistral-nemo-12b", max_num_seqs=256)
    assert get_model("qwen2.5-7b").filtered_sampling and not get_model("mistral-nemo-12b").filtered_sampling
    b = np.array([1.0, 132.0, 133.0, 4096.0])
    wave = 5e-9 * 152064
    assert sampling_seconds(qwen, knobs, b) == pytest.approx([wave, wave, 2 * wave, 2 * wave])  # ≤ 256 rows
    assert np.all(sampling_seconds(nemo, knobs, b) == 0.0)
    assert np.all(step_parts(qwen, knobs, b)["sampling"] == sampling_seconds(qwen, knobs, b))
    a100 = VllmSpec("qwen2.5-7b", gpu="a100", max_num_seqs=256)  # 108 SMs: a second wave sooner
    assert sampling_seconds(a100, knobs, np.array([120.0]))[0] == pytest.approx(2 * wave)


def test_no_streamed_chunk_constant_in_the_catalogue():
    # issue 33 item 2: the chunk fraction is read from each measured run, never carried as a constant
    assert not any(hasattr(m, "stream_fraction") for m in MODELS.values())

def test_the_per_token_forms_shard_or_not_and_both_give_way_to_compute():
    """Issue 33 item 5: `token_units` "shard" prices each token's GEMM work on this GPU's shard (/tp, /2
    with FP8 weights); "layer" (shipped) is TP-blind; both sit on the memory side of max(memory,
    compute): a memory-bound decode step pays them, an 8,192-token prefill at TP 1 does not."""
    from specsched.price.vllm import TOKEN_FORM, VllmSpec, step_parts, token_units

    assert TOKEN_FORM == "row"
    b = np.array([64.0, 8192.0])
    one, eight = (VllmSpec(model="llama3.1-70b", tp=tp) for tp in (1, 8))
    assert token_units(eight, b, "shard") == pytest.approx(token_units(one, b, "shard") / 8)
    assert token_units(eight, b, "layer") == pytest.approx(token_units(one, b, "layer"))
    fp8 = VllmSpec(model="llama3.1-70b", tp=8, precision="fp8")
    assert token_units(fp8, b, "shard") == pytest.approx(token_units(eight, b, "shard") / 2)
    with pytest.raises(ValueError):
        token_units(one, b, "tokens")
    with_c, without = Knobs(c_token=0.5e-6), Knobs(c_token=0.0)
    for spec, form in ((one, "layer"), (one, "shard"), (eight, "shard"), (fp8, "shard")):
        on = step_parts(spec, with_c, b, token_form=form)["weights_or_compute"]
        off = step_parts(spec, without, b, token_form=form)["weights_or_compute"]
        assert on[0] > off[0]
        assert on[1] == pytest.approx(off[1])
