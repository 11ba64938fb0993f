"""A drafter priced from its own shape (specsched.price.draft_shape, sim.deploy.draft): shapes, monotonicity,
presets, bad names, and a vLLM deployment run that uses it."""

from __future__ import annotations

import numpy as np
import pytest

from sim.config import DrafterConfig
from specsched import DraftCost, InputError
from specsched.draft_cost import plan_prices
from specsched.price import get_gpu, get_model
from specsched.price.draft_shape import PRESETS, drafter_shape, own_draft_cost, pass_seconds
from specsched.price.knobs import shipped_knobs
from specsched.price.vllm import VllmSpec, cost_table

TARGET, GPU = get_model("llama3.1-8b"), get_gpu("h100")
KNOBS = shipped_knobs("h100")


def test_eagle3_llama31_8b_shape_matches_the_release():
    s = drafter_shape("eagle3", TARGET)
    assert (s.layers, s.hidden, s.vocab, s.own_head, s.kind) == (1, 4096, 32000, True, "autoregressive")
    # one target-shaped layer ≈ the target's non-embedding parameters / layers
    per_layer = (TARGET.params - 2 * TARGET.vocab * TARGET.hidden) / TARGET.layers
    assert drafter_shape("eagle1", TARGET).layer_params == pytest.approx(per_layer, rel=0.02)
    assert s.params == pytest.approx(s.layer_params + 3 * 4096**2 + 32000 * 4096)


def test_shared_head_reads_the_target_vocabulary():
    for name in ("eagle1", "mtp", "dflash", "dspark"):
        s = drafter_shape(name, TARGET)
        assert (s.vocab, s.own_head) == (TARGET.vocab, False)
    assert drafter_shape("dflash", TARGET).kind == "parallel"
    assert set(PRESETS) == {"eagle1", "eagle3", "mtp", "dflash", "dspark"}
    assert all(PRESETS[k][-1] for k in PRESETS)  # every preset names its source


def test_pass_price_is_monotone_and_has_a_fixed_part():
    m = np.arange(0, 2049)
    s = drafter_shape("eagle3", TARGET)
    t = pass_seconds(s, GPU, KNOBS, m)
    assert np.all(np.diff(t) >= 0)
    assert t[0] >= KNOBS.step_s + 2 * KNOBS.c0 > 0
    full = pass_seconds(drafter_shape("eagle1", TARGET), GPU, KNOBS, m)  # full 128k head, 2h fc
    assert np.all(full > t - 1e-12)
    assert np.all(pass_seconds(drafter_shape("dflash", TARGET), GPU, KNOBS, m) > full)


def test_draft_cost_prices_gamma_passes_and_rejection_sampling():
    table = cost_table(VllmSpec(model="llama3.1-8b"), KNOBS)
    cost, kv = own_draft_cost(drafter_shape("eagle3", TARGET), TARGET, GPU, KNOBS, 3, 768)
    one = cost.own.latency(np.array([8]))[0]
    got = cost.seconds(np.array([3] * 8), table)
    assert got == pytest.approx(3 * one + 24 * cost.position_s + cost.step_s)
    assert cost.seconds(np.array([2] * 8), table) < got  # fewer passes, fewer positions
    assert kv > 0 and cost.seconds(np.zeros(8, dtype=np.int64), table) == 0.0
    prices = plan_prices(table, cost, 8, 3)
    planned = prices(np.array([24]), np.array([8]), np.array([3]))[0] / 256
    assert planned == pytest.approx(got + float(table.latency_range(32, 32)[0]), rel=1e-12)
    par, _ = own_draft_cost(drafter_shape("dflash", TARGET), TARGET, GPU, KNOBS, 7, 7 * 256)
    assert par.seconds(np.array([7] * 4), table) == pytest.approx(
        par.own.latency(np.array([28]))[0] + 28 * par.position_s + par.step_s
    )


def test_bad_preset_is_one_line_naming_the_key():
    with pytest.raises(InputError) as err:
        DrafterConfig(name="eagle3", gamma=3, model="eagle9")
    assert err.value.field == "drafter.model" and "\n" not in str(err.value)
    with pytest.raises(InputError):
        drafter_shape("nope", TARGET)
    assert DraftCost("free").seconds(np.array([1]), cost_table(VllmSpec(model="llama3.1-8b"), KNOBS)) == 0.0


def test_run_with_drafter_model_prices_its_draft_pass():
    from sim.config_io import load_config
    from sim.run import simulate

    base = ["cost.model=llama3.1-8b", "drafter.name=eagle3", "drafter.gamma=3", "policy.name=fixed",
            "workload.num_requests=40", "server.max_num_seqs=16"]  # fmt: skip
    old = simulate(load_config(None, base)).summary
    new = simulate(load_config(None, [*base, "drafter.model=eagle3"])).summary
    assert new["draft_s_mean"] > old["draft_s_mean"] > 0
    with pytest.raises(InputError) as err:
        simulate(load_config(None, ["drafter.model=eagle3", "workload.num_requests=5"]))
    assert err.value.field == "drafter.model"
