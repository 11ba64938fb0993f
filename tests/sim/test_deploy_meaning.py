"""Issue 36 item 2: a deployment is checked as vLLM would check it — one request of max_model_len fits the
KV cache, cost.ep only where it prices something, an EP group spreads a MoE model's experts evenly, a bool
is a bool, a table and a deployment are not both named."""

from __future__ import annotations

import pytest

from sim.config_io import load_config
from sim.deploy.cost import deployment
from sim.deploy.keys import check_room
from specbed.cli import main
from specsched.io.errors import InputError


def _err(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize(
    "toml, field",
    [
        ('[cost]\nmodel = "llama3.1-8b"\nmax_model_len = 10000000\n', "cost.max_model_len"),
        (
            '[cost]\nmodel = "llama3.1-8b"\nmax_model_len = 100000\n[server]\nkv_tokens = 5000\n',
            "cost.max_model_len",
        ),
        ('[cost]\ntable = "h200-v4flash"\nep = 4\n', "cost.ep"),
        ('[server]\nmodel = "llama3.1-8b"\nprefix_caching = 0\n', "server.prefix_caching"),
        ('[server]\nmodel = "llama3.1-8b"\ncost = "h100-dense8b"\n', "cost.table"),
    ],
)
def test_a_deployment_vllm_would_refuse_is_one_line_naming_the_key(toml, field, tmp_path, capsys):
    (tmp_path / "c.toml").write_text(toml + "[workload]\nnum_requests = 20\n")
    assert main(["run", "--quiet", str(tmp_path / "c.toml")]) == 2
    err = [line for line in _err(capsys) if ": warning: " not in line]
    assert len(err) == 1 and f"field '{field}'" in err[0], err


def test_room_for_one_request_is_checked_against_vllms_sizing():
    check_room(445_488, 8192, sized=True, where="x")
    check_room(445_488, None, sized=True, where="x")  # vLLM's default: the checkpoint's (not catalogued)
    with pytest.raises(InputError, match="gpu_memory_utilization"):
        check_room(4096, 8192, sized=True, where="x")
    cfg = load_config(None, ["cost.model=llama3.1-8b", "cost.max_model_len=32768"])
    assert deployment(cfg).config.server.kv_tokens >= 32768  # a real deployment is taken


@pytest.mark.parametrize(
    "sets, field",
    [
        (["pool.decode.ep_gpus=12", "pool.decode.attention_ranks=12"], "pool.decode.ep_gpus"),
        (["pool.decode.ep_gpus=32", "pool.decode.attention_ranks=32", "pool.decode.redundant_experts=8"],
         "pool.decode.ep_gpus"),
    ],
)  # fmt: skip
def test_an_ep_group_that_cannot_spread_its_experts_is_refused(sets, field, capsys):
    argv = ["run", "--quiet", "configs/disagg-small.toml", "--set", "workload.num_requests=20"]
    for s in sets:
        argv += ["--set", s]
    assert main(argv) == 2
    err = _err(capsys)
    assert len(err) == 1 and f"field '{field}'" in err[0] and "experts" in err[0], err


def test_an_even_ep_group_runs(capsys):
    argv = ["run", "--quiet", "configs/disagg-small.toml", "--set", "workload.num_requests=20"]
    argv += ["--set", "pool.decode.ep_gpus=16", "--set", "pool.decode.attention_ranks=16"]
    assert main(argv) == 0
