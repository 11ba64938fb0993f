"""The serving engine's speculative step (specsched.price.spec_engine, drafter.engine): EAGLE's first pass
over
the verified positions, SGLang's eager draft extend, its exposed host work (per step, per request, per
emitted token), its eager draft passes above 32 requests, the config key, the bench."""

from __future__ import annotations

import numpy as np
import pytest

from sim.config import DrafterConfig
from sim.deploy.keys import SPEC_ENGINES
from specsched import DraftCost, InputError
from specsched.draft_cost import plan_prices
from specsched.price import get_gpu, get_model
from specsched.price.draft_shape import drafter_shape, own_draft_cost, pass_seconds
from specsched.price.knobs import shipped_knobs
from specsched.price.spec_engine import (
    EAGER_OP_S,
    ENGINES,
    SGLANG_DECODE_OPS,
    SGLANG_EXTEND_OPS,
    SGLANG_GRAPH_MAX_BS,
    SGLANG_HOST_OPS,
    SGLANG_HOST_REQ_S,
    SGLANG_HOST_STEP_S,
    SGLANG_HOST_TOKEN_S,
    SGLANG_NOSPEC_REQ_S,
    SGLANG_OVERLAP_GAIN_S,
    get_engine,
    host_request_seconds,
    host_step_seconds,
)
from specsched.price.vllm import VllmSpec, cost_table
from specsched.spec_knobs import SpecKnobs

TARGET, GPU = get_model("llama3.1-8b"), get_gpu("h100")
KNOBS = shipped_knobs("h100")
SHAPE = drafter_shape("eagle3", TARGET)
TABLE = cost_table(VllmSpec(model="llama3.1-8b"), KNOBS)


#: the knobs these tests pin figures with: the priors, with the sourced 10 µs an op
PINNED = SpecKnobs(op_s=EAGER_OP_S, host_scale=1.0)


def _cost(engine, **kw):
    kw.setdefault("spec_knobs", PINNED)
    return own_draft_cost(SHAPE, TARGET, GPU, KNOBS, 3, 768, engine=engine, **kw)[0]


def test_vllm_first_pass_runs_the_layers_over_every_verified_position():
    cost = _cost("vllm")
    first = cost.first.latency(np.array([32]))[0]
    # vLLM scatters EAGLE-3's 32k logits into the target's vocabulary before the argmax (full_vocab_map)
    full = {"logit_vocab": TARGET.vocab}
    assert first == pytest.approx(pass_seconds(SHAPE, GPU, KNOBS, 32, head_m=8, **full)[()])
    assert cost.own.latency(np.array([8]))[0] <= first <= pass_seconds(SHAPE, GPU, KNOBS, 32, **full)[()]
    got = cost.seconds(np.array([3] * 8), TABLE)
    rest = 2 * cost.own.latency(np.array([8]))[0]
    assert got == pytest.approx(first + rest + 24 * cost.position_s + cost.step_s)
    assert cost.step_s == pytest.approx(KNOBS.c0)  # async scheduling: no host term
    planned = plan_prices(TABLE, cost, 8, 3)(np.array([24]), np.array([8]), np.array([3]))[0] / 256
    assert planned == pytest.approx(got + float(TABLE.latency_range(32, 32)[0]), rel=1e-12)
    assert cost.seconds(np.zeros(8, dtype=np.int64), TABLE) == 0.0
    one = cost.seconds(np.array([1] * 8), TABLE)  # γ = 1: the first pass alone
    assert one == pytest.approx(cost.first.latency(np.array([16]))[0] + 8 * cost.position_s + cost.step_s)


def test_sglang_prices_an_eager_draft_extend_and_its_exposed_host_work():
    vllm, sglang = _cost("vllm"), _cost("sglang")
    m = np.array([8, 32, 256])
    assert np.all(sglang.first.latency(m) >= SGLANG_EXTEND_OPS * EAGER_OP_S)
    assert np.all(sglang.first.latency(m) >= vllm.first.latency(m))
    assert sglang.step_s == pytest.approx(KNOBS.c0 + SGLANG_HOST_STEP_S + SGLANG_HOST_OPS * EAGER_OP_S)
    assert SGLANG_OVERLAP_GAIN_S == pytest.approx(0.613e-3, rel=1e-3)  # sglang#5608's two throughputs
    assert SGLANG_HOST_STEP_S == pytest.approx(SGLANG_OVERLAP_GAIN_S - 16 * SGLANG_NOSPEC_REQ_S)
    assert 0 < SGLANG_HOST_STEP_S < SGLANG_OVERLAP_GAIN_S
    d = np.array([3] * 16)
    assert sglang.seconds(d, TABLE) > vllm.seconds(d, TABLE)
    slow = _cost("sglang", op_s=20e-6)
    assert slow.seconds(d, TABLE) > sglang.seconds(d, TABLE)
    assert host_step_seconds(get_engine("vllm")) == 0.0


def test_sglang_exposes_host_work_per_request_and_per_emitted_token():
    bound, vllm = _cost("sglang"), _cost("vllm")  # emitted None: the bound 1 + γ
    assert bound.request_s == pytest.approx(SGLANG_HOST_REQ_S + 3 * SGLANG_HOST_TOKEN_S)
    assert vllm.request_s == 0.0 and host_request_seconds(get_engine("vllm"), 4) == 0.0
    mean = _cost("sglang", emitted=2.605)
    assert mean.request_s == pytest.approx(SGLANG_HOST_REQ_S + 1.605 * SGLANG_HOST_TOKEN_S)
    assert _cost("sglang", emitted=2.605, host_scale=2.0).request_s == pytest.approx(2 * mean.request_s)
    for r in (1, 8, 32):  # R drafting requests add R · request_s, and the planned price agrees
        d = np.array([3] * r)
        extra = mean.seconds(d, TABLE) - _cost("sglang", emitted=2.605, host_scale=0.0).seconds(d, TABLE)
        assert extra == pytest.approx(r * mean.request_s, rel=1e-9)
        planned = plan_prices(TABLE, mean, r, 3)(np.array([3 * r]), np.array([r]), np.array([3]))[0] / 256
        verify = float(TABLE.latency_range(4 * r, 4 * r)[0]) + r * TABLE.request_seconds
        assert planned == pytest.approx(mean.seconds(d, TABLE) + verify)
    with pytest.raises(ValueError):
        DraftCost("autoregressive", own=TABLE, request_s=-1.0)


def test_sglang_draft_passes_run_eagerly_above_its_captured_batches():
    sglang, vllm = _cost("sglang", op_s=20e-6), _cost("vllm", op_s=20e-6)
    inside = np.arange(1, SGLANG_GRAPH_MAX_BS + 1)
    later = pass_seconds(SHAPE, GPU, KNOBS, inside, fusion=False)  # a later pass: no fusion fc (EAGLE-3)
    assert np.allclose(sglang.own.latency(inside), later, rtol=1e-12)
    above = np.array([SGLANG_GRAPH_MAX_BS + 1, 48, 64])
    assert np.all(sglang.own.latency(above) >= SGLANG_DECODE_OPS * 20e-6)
    assert np.all(sglang.own.latency(above) > vllm.own.latency(above))  # 25 ops × 20 µs > the GPU's pass
    gpu_later = pass_seconds(SHAPE, GPU, KNOBS, above, fusion=False)
    assert np.all(_cost("sglang").own.latency(above) >= gpu_later - 1e-15)


def test_engine_names_are_validated_in_one_line():
    assert SPEC_ENGINES == tuple(ENGINES)
    assert all(e.source for e in ENGINES.values())
    assert get_engine(ENGINES["sglang"]) is ENGINES["sglang"]
    with pytest.raises(InputError) as err:
        DrafterConfig(name="eagle3", gamma=3, model="eagle3", engine="tensorrt")
    assert err.value.field == "drafter.engine" and "\n" not in str(err.value)
    with pytest.raises(InputError):
        get_engine("nope")
    with pytest.raises(ValueError):
        DraftCost("parallel", own=TABLE, first=TABLE)


def test_bench_orders_the_pricings_and_keeps_the_published_table():
    from bench.bench_spec_price import (
        FLAT,
        PUBLISHED,
        SGLANG_STEP_ONLY,
        VLLM_MEASURED,
        old_speedups,
        speedups,
    )

    assert list(PUBLISHED) == [2, 4, 8, 16, 24, 32, 48, 56, 64]
    assert 1 + sum(VLLM_MEASURED) == pytest.approx(2.605, abs=1e-3)
    sgl, vllm = speedups("eagle3", "sglang", FLAT), speedups("eagle3", "vllm", FLAT)
    bare, old = speedups("eagle3", None, FLAT), old_speedups(FLAT)
    for b in PUBLISHED:
        # the first pass over 4R: weight-bound, ~free; the engines run EAGLE-3's fusion fc in the first pass
        # only, the bare pricing (no engine) in every pass, so vLLM's step may undercut it by that fc
        assert 1.0 < sgl[b] < vllm[b] < old[b] and bare[b] < old[b]
        assert vllm[b] <= bare[b] * 1.02
    # per-request host work: the speedup now falls with the batch, below the per-step-only pricing from 16
    now, before = speedups("eagle3", "sglang"), speedups("eagle3", SGLANG_STEP_ONLY)
    assert all(now[a] > now[b] for a, b in zip(list(PUBLISHED), list(PUBLISHED)[1:]))
    assert all(now[b] < before[b] for b in PUBLISHED if b >= 16) and now[2] > before[2]


def test_host_loop_model_runs_the_v044_loops():
    import torch

    from bench.bench_spec_price import _Req, _spec_step, _time_step, _Tokenizer

    reqs = [_Req(i, _Tokenizer()) for i in range(3)]
    rows = torch.tensor([[4 * r + j if j < 2 else -1 for j in range(4)] for r in range(3)])
    _spec_step(reqs, (rows, torch.arange(12), torch.zeros(6)), 2, 3)
    assert [len(r.output_ids) for r in reqs] == [258] * 3 and all(r.verify_ct == 1 for r in reqs)
    eos = _Req(9, _Tokenizer())
    eos.output_ids.append(128009)
    eos.check_finished()
    assert eos.finished()
    assert _time_step(2, None, reps=1, trials=1) > 0 and _time_step(2, 2, reps=1, trials=1) > 0


def test_run_with_drafter_engine_sglang_drafts_slower():
    from sim.config_io import load_config
    from sim.run import simulate

    base = ["cost.model=llama3.1-8b", "drafter.name=eagle3", "drafter.gamma=3", "policy.name=fixed",
            "workload.num_requests=30", "server.max_num_seqs=8", "drafter.model=eagle3"]  # fmt: skip
    vllm = simulate(load_config(None, base)).summary
    sgl = simulate(load_config(None, [*base, "drafter.engine=sglang"])).summary
    assert sgl["draft_s_mean"] > vllm["draft_s_mean"] > 0
