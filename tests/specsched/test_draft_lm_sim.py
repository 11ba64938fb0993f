"""A draft-model drafter (a small LM, `specsched.draft_lm`) the simulator runs: `drafter.model` names a
draft LM, priced from its own shape by `sim.deploy.draft`, launched as vLLM's "draft_model" method."""

from __future__ import annotations

import pytest

from analysis.spec_config import speculative_config
from sim.config_io import config_to_dict, load_config
from sim.run import simulate
from specsched.draft_lm import drafter_of, sibling
from specsched.io.errors import InputError
from specsched.price import find_model

BASE = ["cost.model=llama3.1-8b", "cost.gpu=h100", "workload.kind=closed", "workload.concurrency=8",
        "workload.num_requests=24", "workload.input_tokens=256", "workload.output_tokens=48",
        "drafter.name=eagle3", "drafter.gamma=3", "policy.name=fixed", "policy.k=3"]  # fmt: skip


def _run(model: str) -> dict:
    return simulate(load_config(None, [*BASE, f"drafter.model={model}"])).summary


def test_a_draft_lm_runs_and_costs_more_draft_time_than_an_eagle_head():
    lm, head = _run("llama3.2-1b"), _run("eagle3")
    # same acceptance (drafter.name's curve), a 16-layer drafter vs a 1-layer head
    assert lm["tau_mean"] == pytest.approx(head["tau_mean"])
    assert lm["draft_time_frac"] > 1.5 * head["draft_time_frac"] > 0
    assert "accuracy_spec_speedup_median_pct" in lm  # the speculative band is stated


def test_siblings_and_shapes():
    assert sibling(find_model("llama3.1-70b")) == "llama3.2-1b"
    assert sibling(find_model("qwen3-8b")) == "qwen3-0.6b"
    assert sibling(find_model("deepseek-v3")) is None
    shape = drafter_of("llama3.2-1b", find_model("llama3.1-70b"))
    assert shape.layers == 16 and shape.own_head and shape.fc_in == 0
    assert drafter_of("eagle3", find_model("llama3.1-70b")).name == "eagle3"


def test_an_unknown_drafter_model_is_one_input_error():
    with pytest.raises(InputError, match="drafter preset .* or a draft model"):
        load_config(None, [*BASE, "drafter.model=no-such-lm"])


def test_the_launch_is_vllms_draft_model_method():
    doc = config_to_dict(load_config(None, [*BASE, "drafter.model=llama3.2-1b"]))
    spec = speculative_config(doc, {}, None)
    assert spec == {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct",
                    "num_speculative_tokens": 3}  # fmt: skip
