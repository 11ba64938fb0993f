"""Losslessness across the batch (engine/proof/batch.py, issue 32): every registered policy keeps the firewall
and emits exactly the targets' law in random batches of 2 requests; the negative controls — `lookahead` and
the cross-request `peek_partner` — are caught by random batch cases alone in every seed tried."""

import numpy as np
import pytest

import specsched
from engine.proof import batch as B
from specsched.registry import specs

CLAIMED = [n for n, s in specs().items() if not s.control]
CONTROLS = [n for n, s in specs().items() if s.control]


@pytest.mark.parametrize("name", CLAIMED)
def test_every_registered_policy_passes_the_firewall_and_batch_enumeration(name):
    policy = B._proof_subject(name, quick=True)
    assert B.firewall_violation(policy, np.random.default_rng(7)) is None
    caught, worst = B.prove(policy, (11,), 5)
    assert caught == 0 and worst == 0.0


@pytest.mark.parametrize("name", CONTROLS)
def test_registered_controls_break_the_firewall_and_are_caught_in_every_seed(name):
    control = specsched.make_policy(name)
    assert B.firewall_violation(control, np.random.default_rng(7)) is not None
    caught, worst = B.prove(control, (0, 1, 2), 100)
    assert caught == 3 and worst > 0


def test_the_cross_request_control_is_caught_in_every_seed_and_keeps_its_own_firewall():
    """peek_partner never reads its own drafts (so the own-request firewall cannot see it); only the batch's
    joint law shows the bias."""
    caught, worst = B.prove(B.peek_partner, (0, 1, 2), 100)
    assert caught == 3 and worst > 0


def test_stale_policies_with_delay_zero_break_the_firewall():
    for name in ("dspark_global", "goodput"):
        control = specsched.make_policy(name, delay=0)
        assert B.firewall_violation(control, np.random.default_rng(3)) is not None


def test_batch_cases_hold_two_requests_with_their_own_models():
    case = B.random_batch_case(np.random.default_rng(0))
    assert len(case.targets) == len(case.drafts) == len(case.prompts) == 2 and case.gamma == 2
    assert case.targets[0] is not case.targets[1] and case.conf((0,)) != case.conf((1,))
