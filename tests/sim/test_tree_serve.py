"""Draft trees in `specbed run` (drafter.topk > 1, sim.tree_step): a topk = 1 run is today's chain bit for
bit, a tree run is deterministic, bills the tree kernel and verifies nodes; bad tree configs are refused."""

from __future__ import annotations

import numpy as np
import pytest

from sim.tree_step import tree_step
from specsched.io.errors import InputError
from tests.sim.simutil import config, run

BASE = ("workload.kind=closed", "workload.concurrency=4", "workload.num_requests=60",
        "workload.input_tokens=256", "workload.output_tokens=64", "workload.domain=chat",
        "drafter.name=eagle3", "drafter.gamma=4")  # fmt: skip
TREE = (*BASE, "drafter.topk=3", "drafter.tree_nodes=12", "policy.name=dspark_tree")


def _same(a, b) -> None:
    assert a.summary == b.summary
    for key in a.requests:
        np.testing.assert_array_equal(a.requests[key], b.requests[key])


def test_topk1_is_the_chain_bit_for_bit():
    """drafter.topk = 1 (any tree_nodes, rank_hit, tree_penalty) takes the chain's code: same summary
    and per-request columns as the config without tree keys; no tree part billed."""
    chain = run(*BASE)
    keys = ("drafter.topk=1", "drafter.tree_nodes=5", "drafter.rank_hit=0.9", "drafter.tree_penalty=3")
    topk1 = run(*BASE, *keys)
    _same(chain, topk1)
    assert chain.summary["step_s_tree"] == 0.0
    assert tree_step(config(*BASE)) is None


def test_dspark_tree_on_a_chain_is_dspark():
    """The registered tree policy over a chain (topk = 1) decides as DSpark (Algorithm 1's first stop)."""
    dspark = run(*BASE)
    tree = run(*BASE, "policy.name=dspark_tree")
    assert dspark.summary["throughput_tok_s"] == tree.summary["throughput_tok_s"]
    np.testing.assert_array_equal(dspark.requests["verify_tokens"], tree.requests["verify_tokens"])


def test_tree_run_is_deterministic_and_bills_the_tree():
    """On a catalogue deployment (its table reads KV, so the tree kernel has a price)."""
    deploy = (*TREE, "cost.model=llama3.1-8b", "cost.gpu=h100")
    a, b = run(*deploy), run(*deploy)
    _same(a, b)
    s = a.summary
    assert s["step_s_tree"] > 0.0
    # nodes verified per request-step may exceed γ (a tree), within the node cap
    assert 4 + 1 < s["mean_verify_tokens_per_request_step"] <= 12 + 1
    assert max(s["spec_accepted_per_pos"]) > 0 and len(s["spec_accepted_per_pos"]) == 4


def test_stale_tree_budget_runs_and_differs_from_the_current_one():
    a, b = run(*TREE, "policy.name=dspark_tree_global"), run(*TREE, "policy.name=dspark_tree_global")
    _same(a, b)
    assert a.summary["throughput_tok_s"] != run(*TREE).summary["throughput_tok_s"]


def test_fixed_tree_verifies_the_cap():
    s = run(*TREE, "policy.name=fixed_tree").summary
    assert s["mean_verify_tokens_per_request_step"] == pytest.approx(13.0)


@pytest.mark.parametrize(
    "sets, key",
    [
        (("drafter.topk=3",), "policy.name"),  # a chain policy cannot plan nodes
        (("drafter.topk=3", "policy.name=dspark_tree_global", "policy.delay=0"), "policy.delay"),
        (("drafter.topk=0",), "drafter.topk"),
        (("drafter.topk=65",), "drafter.topk"),
        (("drafter.rank_hit=1.5",), "drafter.rank_hit"),
        (("drafter.name=none", "drafter.topk=2", "policy.name=dspark_tree"), "drafter.topk"),
    ],
)
def test_bad_tree_configs_are_refused(sets, key):
    with pytest.raises(InputError, match=key.replace(".", r"\.")):
        config(*BASE, *sets)
