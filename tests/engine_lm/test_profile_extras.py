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
