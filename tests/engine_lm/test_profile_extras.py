"""The profile's extra measurements for the fidelity twin: the speed probe (times taken out of the rollout,
steps in probe-normalized seconds), the padded-slot cost of a ragged verify forward, and the draft-pass
regressor (drafts each request verified in its previous step)."""

import numpy as np

from engine.measure.profile import intake_tokens, padding_seconds
from engine.measure.rollout import SpeedProbe, engine_config, run_rollout


def _run(bundle, corpus, probe=None, k=2):
    from engine.lm.drafters import runtime_drafter
    from engine.measure.profile import mixed_requests

    name = bundle.names()[0]
    target = bundle.target("cpu")
    drafter = runtime_drafter(
        bundle.net(name), target, slots=3, max_len=bundle.config.max_len, temps=bundle.drafters[name][1]
    )
    reqs = mixed_requests(corpus, 4, 8, 12, seed=3)
    ecfg = engine_config("cpu", gamma=3, policy="fixed", policy_params={"k": k}, max_running=3)
    return run_rollout(
        target,
        drafter,
        ecfg,
        reqs,
        max_len=bundle.config.max_len,
        clock="process",
        probe=probe,
        probe_every=2,
    )[0]


def test_probe_normalizes_and_leaves_decisions_alone(tiny_bundle):
    bundle, corpus = tiny_bundle
    probe = SpeedProbe(bundle.target("cpu"), rows=3)
    assert probe.reference > 0
    plain, probed = _run(bundle, corpus), _run(bundle, corpus, probe)
    assert probed.probe_s.size == plain.steps["end_s"].size // 2
    for key in ("length", "accepted", "rid"):  # the same decode, only the clock differs
        np.testing.assert_array_equal(plain.request_steps[key], probed.request_steps[key])
    st = probed.steps
    assert np.all(np.diff(st["end_s"]) > 0) and np.all(st["end_s"] >= st["start_s"])
    assert np.all(st["draft_s"] <= st["end_s"] - st["start_s"] + 1e-12)


def test_padding_and_intake_measurements(tiny_bundle):
    bundle, corpus = tiny_bundle
    target = bundle.target("cpu")
    pad = padding_seconds(target, 4, 3, 8, reps=5)
    assert np.isfinite(pad) and pad >= 0
    assert padding_seconds(target, 1, 3, 8) == 0.0  # one row: nothing to pad
    ro = _run(bundle, corpus, k=2)
    x = intake_tokens(ro)
    # the first step has no previous one; a request's first (prefill) step is never counted; fixed k = 2
    assert x.shape == ro.steps["end_s"].shape and x[0] == 0 and x.min() >= 0 and x.max() <= 3 * 2
    assert set(np.unique(x)) <= {0.0, 2.0, 4.0, 6.0}


class _Steps:
    """A rollout stand-in: request_steps and steps as `longest_context` and `context_slopes` read them."""

    def __init__(self, rid, step, accepted, n_steps):
        self.request_steps = {"rid": np.array(rid), "step": np.array(step), "accepted": np.array(accepted)}
        self.steps = {"end_s": np.zeros(n_steps)}


def test_longest_context_counts_each_requests_emitted_tokens():
    from engine.measure.profile import longest_context

    # request 7 emits 3, then 1 token; request 2 joins at step 1 and emits 2; step 2 holds both
    ro = _Steps(rid=[7, 7, 2, 7, 2], step=[0, 1, 1, 2, 2], accepted=[2, 0, 1, 5, 0], n_steps=3)
    np.testing.assert_array_equal(longest_context(ro, 10), [10.0, 13.0, 14.0])


def testcontext_slopes_within_each_length():
    from engine.measure.profile import context_slopes

    rng = np.random.default_rng(0)
    runs, clean = [], []
    for k in range(3):  # ℓ = k costs 1 ms more per k; 4 µs (verify) and 2 µs (draft) per context token
        x = rng.uniform(40, 160, 50) + 20 * k  # longer ℓ runs at longer contexts: must not leak in
        runs.append((8, k, None))
        clean.append((None, 1e-3 * (3 + k) + 4e-6 * x, 4e-3 + 2e-6 * x, x))
    ((sv, sd),) = context_slopes(runs, clean).values()
    # per padded KV slot: R = 8 rows padded to the longest context
    assert abs(sv - 4e-6 / 8) < 1e-12 and abs(sd - 2e-6 / 8) < 1e-12
    falling = [(m, -v, d, x) for m, v, d, x in clean]  # a negative fit is noise: floored at 0
    sv0, sd0 = context_slopes(runs, falling)[8]
    assert sv0 == 0.0 and abs(sd0 - 2e-6 / 8) < 1e-12


def test_moved_shifts_each_step_by_its_padded_context():
    from engine.measure.profile import moved

    ro = _Steps(rid=[7, 7, 2, 7, 2], step=[0, 1, 1, 2, 2], accepted=[2, 0, 1, 5, 0], n_steps=3)
    ro.steps = {
        "start_s": np.array([0.0, 1.0, 2.0]),
        "end_s": np.array([0.5, 1.5, 2.5]),
        "draft_s": np.array([0.2, 0.2, 0.2]),
        "requests": np.array([1, 2, 2]),
        "drafting": np.array([1, 2, 0]),
    }
    import dataclasses

    ro = dataclasses.make_dataclass("R", [("request_steps", dict), ("steps", dict)])(
        ro.request_steps, ro.steps
    )
    out = moved(ro, (1e-3, 2e-3), 0.0, 10)  # longest contexts 10, 13, 14 -> moved to none
    np.testing.assert_allclose(out.steps["draft_s"], [0.2 - 2e-3 * 10, 0.2 - 2e-3 * 2 * 13, 0.2])
    verify = out.steps["end_s"] - out.steps["start_s"] - out.steps["draft_s"]
    np.testing.assert_allclose(verify, [0.3 - 1e-3 * 10, 0.3 - 1e-3 * 2 * 13, 0.3 - 1e-3 * 2 * 14])


def test_profile_config_rejects_a_bad_context():
    import pytest

    from engine.measure.profile import ProfileConfig

    assert ProfileConfig(context=146.0).context == 146.0
    for bad in (-1.0, float("inf"), float("nan"), "146"):
        with pytest.raises(ValueError, match="context"):
            ProfileConfig(context=bad)


def test_steady_longest_is_the_mean_largest_position():
    from twin.profile import steady_longest

    assert steady_longest(32, 128, 8) == 32 + 128 * 8 / 9
    rng = np.random.default_rng(1)  # n requests spread uniformly over their outputs: the mean largest
    draws = rng.uniform(0, 128, size=(20000, 8)).max(axis=1).mean()
    assert abs(32 + draws - steady_longest(32, 128, 8)) < 0.5
