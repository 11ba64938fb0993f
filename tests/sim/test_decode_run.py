"""Runs of pure-decode steps decided several at a time (`sim.steps`) give exactly the results of single
steps: same summary, same per-request columns and time series, on open and closed loops, several replicas,
KV pressure; `Recorder.steps_run` records a run as its steps one by one would."""

import numpy as np
import pytest

import sim.server
import sim.steps
from sim import simulate
from sim.config_io import load_config

CASES = {
    "poisson": ["workload.num_requests=200", "workload.rate=6", "workload.output_dist=exponential"],
    "closed-think": [
        "workload.kind=closed",
        "workload.concurrency=6",
        "workload.num_requests=60",
        "workload.think_s=0.5",
        "workload.output_dist=uniform",
    ],
    "replicas": [
        "workload.num_requests=200",
        "workload.rate=12",
        "server.replicas=3",
        "server.router=round_robin",
        "workload.output_dist=exponential",
    ],
    "kv-tight": [
        "workload.num_requests=120",
        "workload.rate=20",
        "workload.input_tokens=256",
        "server.kv_tokens=6000",
        "server.max_num_seqs=8",
    ],
    "padded": ["workload.num_requests=150", "workload.rate=8", "cost.pad_token_seconds=0.0001"],
    "oracle-conf": [
        "workload.num_requests=100",
        "workload.rate=6",
        "acceptance.auc=1.0",
        "acceptance.overconfidence=0",
        "acceptance.sts=false",
    ],
}


def _both(sets, monkeypatch):
    cfg = load_config(None, ["workload.output_tokens=96", *sets])
    passes = []
    real = sim.server.plan_decode_run

    def counting(rep, k, now):
        run = real(rep, k, now)
        passes.append(len(run.seconds))
        return run

    monkeypatch.setattr(sim.server, "plan_decode_run", counting)
    fast = simulate(cfg)
    monkeypatch.setattr(sim.steps, "MAX_RUN", 1)
    slow = simulate(cfg)
    return fast, slow, passes


@pytest.mark.parametrize("case", list(CASES))
def test_multi_step_equals_single_step(case, monkeypatch):
    fast, slow, passes = _both(CASES[case], monkeypatch)
    for key, value in slow.summary.items():
        got = fast.summary[key]
        assert got == value or (value != value and got != got), key
    for key, col in slow.requests.items():
        np.testing.assert_array_equal(fast.requests[key], col, err_msg=key)
    for key, col in slow.series.items():  # the time bins too (one timeout and one record per run)
        np.testing.assert_array_equal(fast.series[key], col, err_msg=key)
    if case != "kv-tight":
        assert passes and max(passes) > 1 and sum(passes) > len(passes)  # runs really happened


def test_stale_policies_take_the_single_step_path(monkeypatch):
    fast, slow, passes = _both(["workload.num_requests=40", "policy.name=dspark_global"], monkeypatch)
    assert not passes
    assert fast.summary == slow.summary or fast.summary["steps"] == slow.summary["steps"]


@pytest.mark.parametrize("width", [10.0, 0.05])  # a run inside one bin, and spread over several
def test_steps_run_equals_steps(width):
    """`Recorder.steps_run` leaves the recorder bit for bit as K calls of `Recorder.step`."""
    from sim.recorder import Recorder

    rng = np.random.default_rng(5)
    k, r, gamma = 9, 4, 3
    seconds = (rng.random(k) * 0.013 + 0.011).tolist()
    times = [7.3]
    for s in seconds:
        times.append(times[-1] + s)
    verify = rng.integers(r, r * (gamma + 1), k).tolist()
    tokens = rng.integers(r, 2 * r, k).tolist()
    lengths = rng.integers(0, gamma + 1, (k, r))
    accepted = np.minimum(lengths, rng.integers(0, gamma + 1, (k, r)))
    one, many = (Recorder(3, max_bins=1 << 14, gamma=gamma) for _ in range(2))
    for rec in (one, many):
        rec.parts[0].bins.width = width
        rec.step(0, 1.0, 0.3, 0.1, r, 10, 5, lengths[0], accepted[0])  # something already in the bins
    for j in range(k):
        one.step(0, times[j], seconds[j], 0.004, r, verify[j], tokens[j], lengths[j], accepted[j])
    many.steps_run(0, times, seconds, 0.004, r, verify, tokens, lengths, accepted)
    one.close(times[-1])
    many.close(times[-1])
    for name in ("steps", "draft_s", "verify_s", "drafts"):
        assert getattr(one, name) == getattr(many, name), name
    np.testing.assert_array_equal(one.accepted_hist, many.accepted_hist)
    np.testing.assert_array_equal(one.bins.data, many.bins.data)
    assert one.bins.used == many.bins.used
    np.testing.assert_array_equal(one.itl.counts, many.itl.counts)
    assert (one.itl.weight, one.itl.total, one.itl.total_sq) == (
        many.itl.weight,
        many.itl.total,
        many.itl.total_sq,
    )


def test_normal_stream_gives_back_in_order():
    """Numbers a `NormalStream` is given back come out again first, in the plain generator's order."""
    from sim.steps import NormalStream

    plain = np.random.default_rng(3).standard_normal(200)
    stream, got = NormalStream(np.random.default_rng(3)), []
    for shape, keep in (((4, 3, 2), 1), ((2, 2), 2), ((1, 5), None), ((3, 7), 0), ((6, 4), 2), ((9,), None)):
        x = stream.standard_normal(shape)
        if keep is None:
            got.extend(x.ravel())
        else:
            got.extend(x[:keep].ravel())
            stream.unget(keep)
    np.testing.assert_array_equal(got, plain[: len(got)])
