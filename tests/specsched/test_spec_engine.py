"""The serving engine's speculative step (specsched.spec_engine, drafter.engine): EAGLE's first pass over
the verified positions, SGLang's eager draft extend and exposed host work, the config key, the bench."""

from __future__ import annotations

import numpy as np
import pytest

from sim.config import DrafterConfig
from sim.config_vllm import SPEC_ENGINES
from sim.vllm_deploy import VllmSpec, cost_table, shipped_knobs
from specsched import DraftCost, InputError
from specsched.catalog import get_gpu, get_model
from specsched.draft_cost import plan_prices
from specsched.draft_shape import drafter_shape, own_draft_cost, pass_seconds
from specsched.spec_engine import (
    EAGER_OP_S,
    ENGINES,
    SGLANG_EXTEND_OPS,
    SGLANG_HOST_OPS,
    SGLANG_HOST_STEP_S,
    get_engine,
    host_step_seconds,
)

TARGET, GPU = get_model("llama3.1-8b"), get_gpu("h100")
KNOBS = shipped_knobs("h100")
SHAPE = drafter_shape("eagle3", TARGET)
TABLE = cost_table(VllmSpec(model="llama3.1-8b"), KNOBS)


def _cost(engine, **kw):
    return own_draft_cost(SHAPE, TARGET, GPU, KNOBS, 3, 768, engine=engine, **kw)[0]


def test_vllm_first_pass_runs_the_layers_over_every_verified_position():
    cost = _cost("vllm")
    first = cost.first.latency(np.array([32]))[0]
    assert first == pytest.approx(pass_seconds(SHAPE, GPU, KNOBS, 32, head_m=8)[()])
    assert cost.own.latency(np.array([8]))[0] <= first <= pass_seconds(SHAPE, GPU, KNOBS, 32)[()]
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
    assert SGLANG_HOST_STEP_S == pytest.approx(0.613e-3, rel=1e-3)  # sglang#5608's two throughputs
    d = np.array([3] * 16)
    assert sglang.seconds(d, TABLE) > vllm.seconds(d, TABLE)
    slow = _cost("sglang", op_s=20e-6)
    assert slow.seconds(d, TABLE) > sglang.seconds(d, TABLE)
    assert host_step_seconds(get_engine("vllm")) == 0.0


def test_engine_names_are_validated_in_one_line():
    assert SPEC_ENGINES == tuple(ENGINES)
    assert all(e.source for e in ENGINES.values())
    with pytest.raises(InputError) as err:
        DrafterConfig(name="eagle3", gamma=3, model="eagle3", engine="trtllm")
    assert err.value.field == "drafter.engine" and "\n" not in str(err.value)
    with pytest.raises(InputError):
        get_engine("nope")
    with pytest.raises(ValueError):
        DraftCost("parallel", own=TABLE, first=TABLE)


def test_bench_orders_the_pricings_and_keeps_the_published_table():
    from bench.bench_spec_price import FLAT, PUBLISHED, VLLM_MEASURED, old_speedups, speedups

    assert list(PUBLISHED) == [2, 4, 8, 16, 24, 32, 48, 56, 64]
    assert 1 + sum(VLLM_MEASURED) == pytest.approx(2.605, abs=1e-3)
    sgl, vllm = speedups("eagle3", "sglang", FLAT), speedups("eagle3", "vllm", FLAT)
    bare, old = speedups("eagle3", None, FLAT), old_speedups(FLAT)
    for b in PUBLISHED:
        assert 1.0 < sgl[b] < vllm[b] <= bare[b] < old[b]  # the first pass over 4R: weight-bound, ~free


def test_run_with_drafter_engine_sglang_drafts_slower():
    from sim.config_io import load_config
    from sim.run import simulate

    base = ["server.model=llama3.1-8b", "drafter.name=eagle3", "drafter.gamma=3", "policy.name=fixed",
            "workload.num_requests=30", "server.max_num_seqs=8", "drafter.model=eagle3"]  # fmt: skip
    vllm = simulate(load_config(None, base)).summary
    sgl = simulate(load_config(None, [*base, "drafter.engine=sglang"])).summary
    assert sgl["draft_s_mean"] > vllm["draft_s_mean"] > 0
