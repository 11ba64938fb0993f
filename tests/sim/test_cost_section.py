"""The `[cost]` section (sim.deploy.keys): a table or a deployment, never both; the old `[server]` spelling
reads with a warning; dumps write `[cost]`; one function prices a config's deployment (sim.deploy.cost)."""

import warnings

import numpy as np
import pytest

from sim.config_io import config_to_dict, config_to_toml, load_config
from sim.deploy.cost import deployment, deployment_cost
from sim.run import prepare
from specsched.io.errors import InputError
from specsched.io.inputs import InputWarning
from specsched.price.knobs import shipped_knobs
from specsched.price.vllm import VllmSpec, cost_table


def _load(tmp_path, text, sets=()):
    path = tmp_path / "c.toml"
    path.write_text(text)
    return load_config(path, sets)


def test_cost_section_reads_as_the_old_server_keys_which_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)  # the new spelling warns about nothing
        new = _load(tmp_path, '[cost]\ntable = "h200-dense8b"\nmode = "linear"\n[server]\nmax_num_seqs = 64')
    with pytest.warns(InputWarning, match=r"c\.toml:2: field 'server\.cost'.*cost\.table"):
        old = _load(tmp_path, '[server]\ncost = "h200-dense8b"\ncost_mode = "linear"\nmax_num_seqs = 64\n')
    assert new == old and new.server.cost == "h200-dense8b" and new.server.cost_mode == "linear"
    with pytest.warns(InputWarning, match="cost.policy_table"):
        load_config(None, ["server.policy_cost=h100-dense8b"])


@pytest.mark.parametrize(
    "sets, field",
    [
        (["cost.model=llama3.1-8b", "cost.table=h200-dense8b"], "cost.table"),
        (["cost.model=llama3.1-8b", "cost.table=h200-v4flash"], "cost.table"),  # given, even at its default
        (["cost.model=llama3.1-8b", "cost.mode=step"], "cost.mode"),
        (["cost.model=llama3.1-8b", "cost.layers=32"], "cost.layers"),  # was silently ignored
        (["cost.model=llama3.1-8b", "cost.max_cudagraph_capture_size=64"], "cost.max_cudagraph_capture_size"),
        (["cost.precision=fp8"], "cost.precision"),  # a deployment key without a deployment
        (["cost.gpu_memory_utilization=0.5"], "cost.gpu_memory_utilization"),
        (["cost.gpu_memory_utilization=1.5", "cost.model=llama3.1-8b"], "cost.gpu_memory_utilization"),
    ],
)
def test_a_key_of_the_other_kind_is_one_line_naming_it(sets, field):
    with pytest.raises(InputError) as err:
        load_config(None, sets)
    assert err.value.field == field and "\n" not in str(err.value)


def test_a_model_unset_again_leaves_a_table():
    cfg = load_config(None, ["cost.model=llama3.1-8b", "cost.model=none", "cost.table=h100-dense8b"])
    assert cfg.server.model is None and cfg.server.cost == "h100-dense8b"


def test_old_spelling_errors_name_the_cost_key(tmp_path):
    with pytest.raises(InputError) as err, pytest.warns(InputWarning):
        _load(tmp_path, '[server]\nmodel = "llama3.1-8b"\nlayers = 32\n')
    assert err.value.field == "cost.layers" and err.value.line == 3


@pytest.mark.parametrize("sets", [["cost.table=h100-dense8b"], ["cost.model=qwen2.5-7b", "cost.gpu=h200"]])
def test_dumps_write_the_cost_section_and_read_back_without_warnings(tmp_path, sets):
    cfg = load_config(None, sets)
    text = config_to_toml(cfg)
    assert "[cost]" in text and "\ncost = " not in text and "cost_mode" not in text
    deployment_keys = ("model", "precision", "gpu_memory_utilization", "prefix_caching")
    kind = ("model",) if cfg.server.model else ("table", "mode", "layers")
    other = ("table", "mode") if cfg.server.model else deployment_keys
    cost = config_to_dict(cfg)["cost"]
    assert all(k in cost for k in kind) and not any(k in cost for k in other)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        assert _load(tmp_path, text) == cfg


def test_one_price_of_a_deployment():
    table = load_config(None, ["cost.table=h100-dense8b", "workload.num_requests=20"])
    assert deployment_cost(table) is prepare(table).cost  # built-ins are cached: the very table
    cfg = load_config(None, ["cost.model=llama3.1-8b", "cost.gpu=h100", "workload.num_requests=20"])
    priced, prep = deployment(cfg), prepare(cfg)
    b = np.arange(1, 2049)
    assert np.array_equal(priced.cost.latency(b), prep.cost.latency(b))
    assert priced.config.server.kv_tokens == prep.config.server.kv_tokens and priced.tp == 1
    # the path `specbed validate` prices a measured run with: the same spec, the GPU's shipped knobs
    spec = VllmSpec(model="llama3.1-8b", gpu="h100")
    assert np.array_equal(cost_table(spec, shipped_knobs("h100")).latency(b), priced.cost.latency(b))
