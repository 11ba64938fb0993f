"""cost.max_cudagraph_capture_size / cudagraph_capture_sizes / eager_factor and the per-request draft."""

from __future__ import annotations

import pytest

import specsched
from sim.config_io import config_to_dict, load_config
from sim.drafter import draft_seconds_table
from sim.run import prepare
from specsched.io.errors import InputError
from tests.sim.simutil import config, run


def test_capture_keys_repad_a_builtin_and_a_csv(tmp_path):
    base = specsched.builtin_cost("h200-v4flash")
    cost = prepare(config("cost.max_cudagraph_capture_size=64", "cost.eager_factor=2")).cost
    assert cost.latency(57) == base.latency(64) and cost.latency(65) == pytest.approx(2 * base.latency(65))
    cost = prepare(config("cost.cudagraph_capture_sizes=8,16,32")).cost
    assert cost.latency(9) == base.latency(16)
    assert cost.latency(33) == pytest.approx(specsched.graphs.EAGER_FACTOR * base.latency(33))
    csv = tmp_path / "c.csv"
    csv.write_text("tokens,seconds\n1,0.01\n100,0.02\n")
    sets = (f"cost.table={csv}", "cost.layers=4", "cost.max_cudagraph_capture_size=16")
    cost = prepare(config(*sets)).cost
    assert cost.latency(9) == cost.latency(16) and cost.latency(17) > 3 * cost.latency(16)
    v4 = prepare(config("cost.table=b300x8-v4pro", "cost.max_cudagraph_capture_size=512")).cost
    own = specsched.builtin_graphs("b300x8-v4pro")[1]
    assert v4.latency(513) / v4.latency(512) == pytest.approx(own, rel=0.05)  # the setup's own factor


def test_capture_sizes_are_ints_in_the_saved_config():
    cfg = load_config(None, ["cost.cudagraph_capture_sizes=32,8,16"])
    assert cfg.server.cudagraph_capture_sizes == (8, 16, 32)
    assert config_to_dict(cfg)["cost"]["cudagraph_capture_sizes"] == [8, 16, 32]


@pytest.mark.parametrize(
    "item, field",
    [
        ("cost.max_cudagraph_capture_size=0", "cost.max_cudagraph_capture_size"),
        ("cost.max_cudagraph_capture_size=2.5", "cost.max_cudagraph_capture_size"),
        ("cost.cudagraph_capture_sizes=8,0", "cost.cudagraph_capture_sizes"),
        ("cost.cudagraph_capture_sizes=8,1.5", "cost.cudagraph_capture_sizes"),
        ("cost.cudagraph_capture_sizes=a,b", "cost.cudagraph_capture_sizes"),
        ("cost.eager_factor=0.5", "cost.eager_factor"),
    ],
)
def test_bad_graph_keys_name_the_key(item, field):
    with pytest.raises(InputError) as info:
        load_config(None, [item])
    assert f"'{field}'" in str(info.value) and "\n" not in str(info.value)


def test_the_v4pro_draft_table_is_a_requests_csv():
    """The b300x8-v4pro draft pass is data for #12's drafter.cost (seconds by request count)."""
    from paper_figs.vllm_adaptive import DRAFT

    cfg = config("drafter.gamma=7", f"drafter.cost={DRAFT}").drafter
    table = draft_seconds_table(cfg, specsched.builtin_cost("b300x8-v4pro"), 256)
    assert table[0] == 0 and table[1] == pytest.approx(3.6e-3) and table[256] == pytest.approx(21.6e-3)
    res = run(
        "cost.table=b300x8-v4pro",
        f"drafter.cost={DRAFT}",
        "workload.kind=closed",
        "workload.concurrency=4",
        "workload.num_requests=8",
        "workload.output_tokens=16",
    )
    assert res.summary["draft_s_mean"] == pytest.approx(float(table[4]), rel=0.5)
