"""drafter.intake_seconds: a drafter that reads the features of what each request committed since it last
drafted pays for the drafts accepted in the request's previous step; bad values refused."""

import pytest

import sim
from sim.config_io import load_config
from specsched.io.errors import InputError

SMALL = ["workload.num_requests=80", "workload.rate=6", "workload.output_tokens=64", "seed=3"]


def _run(sets):
    return sim.simulate(load_config(None, [*SMALL, *sets]))


# -- drafter.intake_seconds: the drafter reads what each request committed since it last drafted -----------

INTAKE = ["drafter.intake_seconds=0.0004"]


def test_no_acceptance_no_intake():
    """ar accepts nothing: every drafting request takes in exactly one token, the draft cost's own."""
    plain = _run(["policy.name=ar"]).summary
    same = _run(["policy.name=ar", *INTAKE]).summary
    assert same.keys() == plain.keys()
    for key, value in plain.items():  # NaN-aware equality
        assert same[key] == value or (value != value and same[key] != same[key]), key
    # measured at one extra token per drafting request: ar's steps are dearer by −0.4 ms per request
    cheaper = _run(["policy.name=ar", *INTAKE, "drafter.intake_tokens=1"]).summary
    assert cheaper["draft_s_mean"] < plain["draft_s_mean"]


def test_accepted_drafts_are_taken_in():
    plain = _run(["policy.name=fixed", "policy.k=3"]).summary
    dear = _run(["policy.name=fixed", "policy.k=3", *INTAKE]).summary
    assert dear["draft_s_mean"] > plain["draft_s_mean"]
    adaptive = _run(["policy.name=dspark", "policy.draft=adaptive", *INTAKE]).summary
    assert (
        adaptive["draft_s_mean"]
        > _run(["policy.name=dspark", "policy.draft=adaptive"]).summary["draft_s_mean"]
    )


@pytest.mark.parametrize("key", ["intake_seconds", "intake_tokens"])
def test_bad_intake(key):
    from sim.config import DrafterConfig

    with pytest.raises(InputError) as err:
        DrafterConfig(**{key: -1.0})
    assert err.value.field == f"drafter.{key}"


def test_pad_token_seconds_charges_ragged_decode_steps():
    """fixed k verifies k drafts for every request (nothing padded); dspark's ragged rows pay for padding."""
    pad = ["cost.pad_token_seconds=0.0005"]
    fixed = _run(["policy.name=fixed", "policy.k=3"]).summary
    same = _run(["policy.name=fixed", "policy.k=3", *pad]).summary
    for key, value in fixed.items():
        assert same[key] == value or (value != value and same[key] != same[key]), key
    plain = _run(["policy.name=dspark"]).summary
    assert _run(["policy.name=dspark", *pad]).summary["step_s_mean"] > plain["step_s_mean"]
    with pytest.raises(InputError) as err:
        from sim.config import ServerConfig

        ServerConfig(pad_token_seconds=-1.0)
    assert err.value.field == "cost.pad_token_seconds"


def test_padded_context_seconds_charges_the_longest_context():
    """One request at a time, one token a step: its steps hold prompt + 0..out−1 tokens of context, so the
    charge per step is on average s · (prompt + (out − 1) / 2); 0 leaves every result alone."""
    one = [
        "workload.kind=closed",
        "workload.concurrency=1",
        "workload.num_requests=3",
        "workload.input_tokens=40",
        "workload.output_tokens=20",
        "policy.name=ar",
        "drafter.name=none",
        "drafter.gamma=0",
        "seed=1",
    ]
    plain = sim.simulate(load_config(None, one)).summary
    off = sim.simulate(load_config(None, [*one, "cost.padded_context_seconds=0"])).summary
    for key, value in plain.items():  # NaN-aware equality
        assert off[key] == value or (value != value and off[key] != off[key]), key
    on = sim.simulate(load_config(None, [*one, "cost.padded_context_seconds=0.001"])).summary
    assert on["steps"] == plain["steps"]
    assert on["step_s_mean"] - plain["step_s_mean"] == pytest.approx(0.001 * (40 + 19 / 2), rel=1e-9)
    # several requests: every running row is padded to the longest, so more requests pay more
    many = _run(["policy.name=dspark", "cost.padded_context_seconds=1e-6"]).summary
    assert many["step_s_mean"] > _run(["policy.name=dspark"]).summary["step_s_mean"]
    with pytest.raises(InputError) as err:
        from sim.config import ServerConfig

        ServerConfig(padded_context_seconds=-1.0)
    assert err.value.field == "cost.padded_context_seconds"


def test_drafter_padded_context_seconds_is_draft_time():
    """The draft pass over the drafting rows' padded context is charged as draft seconds: the steps grow by
    exactly what the draft pass grows by, and nothing else moves (the policy plans without it)."""
    one = ["workload.kind=closed", "workload.concurrency=2", "workload.num_requests=4", "seed=2"]
    for policy in (["policy.name=dspark"], ["policy.name=dspark", "policy.draft=adaptive"]):
        plain = sim.simulate(load_config(None, [*one, *policy])).summary
        on = sim.simulate(load_config(None, [*one, *policy, "drafter.padded_context_seconds=1e-5"])).summary
        assert on["steps"] == plain["steps"] and on["spec_accepted_tokens"] == plain["spec_accepted_tokens"]
        grew = on["draft_s_mean"] - plain["draft_s_mean"]
        assert grew > 0
        assert on["step_s_mean"] - plain["step_s_mean"] == pytest.approx(grew, rel=1e-9)
    with pytest.raises(InputError) as err:
        from sim.config import DrafterConfig

        DrafterConfig(padded_context_seconds=-1.0)
    assert err.value.field == "drafter.padded_context_seconds"
