"""policy.draft = "adaptive" in the simulator: config keys, draft pricing from planned depths, bad input."""

import pytest

from sim.config_io import load_config
from specbed.cli import main as specbed
from specsched import AdaptivePolicy, make_policy
from specsched.io.errors import InputError

from .simutil import run, saturating_cost

CLOSED = ("workload.kind=closed", "workload.input_tokens=32", "workload.output_tokens=48")


def _run(cost: str, users: int, *sets: str):
    return run(
        f"cost.table={cost}",
        "cost.mode=linear",
        "cost.layers=61",
        *CLOSED,
        f"workload.concurrency={users}",
        f"workload.num_requests={3 * users}",
        *sets,
    ).summary


def test_config_keys_reach_the_policy():
    cfg = load_config(None, ["policy.draft=adaptive", "policy.delay=2", "policy.slack=0.2"])
    assert cfg.policy.params() == {"draft": "adaptive", "delay": 2, "slack": 0.2}
    pol = make_policy(cfg.policy.name, **cfg.policy.params())
    assert isinstance(pol, AdaptivePolicy) and (pol.delay, pol.slack) == (2, 0.2)
    assert load_config(None, []).policy.params() == {}  # "full" stays the default, no new params


@pytest.mark.parametrize(
    "sets, field",
    [
        (["policy.draft=partial"], "policy.draft"),
        (["policy.name=lookahead", "policy.draft=adaptive"], "policy.draft"),
        (["policy.slack=0.1"], "policy.slack"),  # only with draft = adaptive
        (["policy.draft=adaptive", "policy.slack=1"], "policy.slack"),
        (["policy.delay=1"], "policy.delay"),  # dspark with full drafting takes no delay
    ],
)
def test_bad_policy_keys_name_the_key(sets, field):
    with pytest.raises(InputError) as info:
        load_config(None, sets)
    assert f"'{field}'" in str(info.value)


def test_cli_bad_draft_mode_is_one_line_exit_2(capsys):
    assert specbed(["run", "--set", "policy.draft=sometimes"]) == 2
    err = capsys.readouterr().err.strip()
    assert "policy.draft" in err and "\n" not in err and "Traceback" not in err


def test_saturated_server_stops_drafting_and_matches_no_speculation(tmp_path):
    cost = saturating_cost(tmp_path, knee=64)
    adaptive = _run(cost, 256, "policy.draft=adaptive")
    plain = _run(cost, 256, "policy.name=ar", "drafter.name=none")
    full = _run(cost, 256)
    assert adaptive["draft_s_mean"] == 0.0  # every request decodes plainly past the knee
    assert adaptive["throughput_tok_s"] >= 0.97 * max(plain["throughput_tok_s"], full["throughput_tok_s"])


def test_light_load_drafts_like_full_and_pays_only_for_what_it_drafts(tmp_path):
    cost = saturating_cost(tmp_path, knee=256)
    adaptive = _run(cost, 8, "policy.draft=adaptive")
    full = _run(cost, 8)
    assert 0.0 < adaptive["draft_s_mean"] <= 1.01 * full["draft_s_mean"]  # per-step mean over other steps
    assert adaptive["throughput_tok_s"] >= 0.97 * full["throughput_tok_s"]


def test_same_config_same_summary(tmp_path):
    cost = saturating_cost(tmp_path, knee=64)
    assert _run(cost, 32, "policy.draft=adaptive") == _run(cost, 32, "policy.draft=adaptive")


@pytest.mark.parametrize(
    "sets", [("drafter.name=eagle3", "policy.name=fixed", "policy.k=7"), ("policy.name=dspark_global",)]
)
def test_other_drafters_and_policies_run_adaptive(tmp_path, sets):
    cost = saturating_cost(tmp_path, knee=64)
    s = _run(cost, 16, *sets, "policy.draft=adaptive")
    assert s["throughput_tok_s"] > 0
