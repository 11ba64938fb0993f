"""server.pad_verify: the verify forward priced at R·(1 + max ℓ) tokens (an engine padding its verify rows
to the longest, as specbed's engine does), verified tokens and decisions unchanged; bad values refused."""

from dataclasses import replace

import numpy as np
import pytest

import sim
from sim.config import ServerConfig
from sim.config_io import load_config
from specsched.errors import InputError

SMALL = ["workload.num_requests=80", "workload.rate=6", "workload.output_tokens=64", "seed=3"]


def _run(sets):
    return sim.simulate(load_config(None, [*SMALL, *sets]))


def test_uniform_lengths_cost_the_same_padded_or_not():
    """fixed k verifies k drafts for every request: nothing to pad, so the run is identical."""
    plain = _run(["policy.name=fixed", "policy.k=3"]).summary
    padded = _run(["policy.name=fixed", "policy.k=3", "server.pad_verify=true"]).summary
    assert padded == plain


def test_ragged_lengths_pay_for_the_longest_row():
    plain = _run(["policy.name=dspark"]).summary
    padded = _run(["policy.name=dspark", "server.pad_verify=true"]).summary
    # Same tokens verified per request-step (decisions do not see the padding), dearer steps.
    assert padded["step_s_mean"] > plain["step_s_mean"]
    assert padded["mean_verify_tokens_per_request_step"] == pytest.approx(
        plain["mean_verify_tokens_per_request_step"], rel=0.05
    )


def test_priced_tokens():
    from sim.deployment import Deployment

    lengths = np.array([0, 3, 7, 1], dtype=np.int64)
    dep = type("D", (), {"pad_verify": True})()
    assert Deployment.priced_tokens(dep, 4, lengths) == 4 * 8
    dep.pad_verify = False
    assert Deployment.priced_tokens(dep, 4, lengths) == 4 + 11
    assert Deployment.priced_tokens(dep, 0, np.zeros(0, dtype=np.int64)) == 0


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_bad_pad_verify(bad):
    with pytest.raises(InputError) as err:
        replace(ServerConfig(), pad_verify=bad)
    assert err.value.field == "server.pad_verify"
