"""ITL and speculation counters in summary.json, `specbed export --format vllm-bench` (keys and ms units
against summary.json), `specbed compare`, and `specbed run --timeline` (Chrome Trace Event structure, one
"X" event per engine step). Bad input: one stderr line naming the file and field, exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim.recorder import LogHistogram
from specbed.cli import main as specbed
from specsched.stepcost import PARTS

WHOLE = ["--set", "metrics.warmup=0", "--set", "metrics.drain=0"]
SMALL = [
    "--set", "workload.num_requests=60", "--set", "workload.rate=20", "--set", "acceptance.sts_samples=256",
    "--set", "server.replicas=2", *WHOLE,
]  # fmt: skip
VLLM_KEYS = {
    "completed", "total_input_tokens", "total_output_tokens", "duration", "request_throughput",
    "output_throughput", "total_token_throughput", "spec_decode_acceptance_length", "spec_decode_num_drafts",
    "spec_decode_draft_tokens", "spec_decode_accepted_tokens", "spec_decode_per_position_acceptance_rates",
}  # fmt: skip
VLLM_KEYS |= {
    f"{s}_{m}_ms" for s in ("mean", "median", "std", "p99") for m in ("ttft", "tpot", "itl", "e2el")
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert specbed(["run", *SMALL, "--out", str(out), "--quiet", "--timeline"]) == 0
    return out


def test_log_histogram_quantiles_close_to_exact():
    rng = np.random.default_rng(0)
    x = rng.lognormal(-3.0, 0.7, 5000)
    h = LogHistogram()
    for v in x:
        h.add(float(v))
    for q in (0.5, 0.9, 0.99):
        assert h.quantile(q) == pytest.approx(np.quantile(x, q), rel=0.01)
    assert h.mean() == pytest.approx(x.mean(), rel=1e-12)
    assert h.std() == pytest.approx(x.std(), rel=1e-9)
    assert np.isnan(LogHistogram().quantile(0.5))


def test_summary_has_itl_e2e_and_spec_counters(run_dir):
    s = json.loads((run_dir / "summary.json").read_text())
    for key in ("itl_s_mean", "itl_s_p50", "itl_s_p90", "itl_s_p99", "itl_s_std", "e2e_s_mean", "e2e_s_p99"):
        assert s[key] > 0, key
    # with speculation a step's accepted tokens arrive together: a gap is a step, longer than TPOT
    assert s["itl_s_mean"] > s["tpot_s_mean"]
    assert len(s["spec_accepted_per_pos"]) == s["gamma"]
    assert sum(s["spec_accepted_per_pos"]) == s["spec_accepted_tokens"]
    assert s["spec_acceptance_length"] == pytest.approx(1 + s["spec_accepted_tokens"] / s["spec_drafts"])


def test_itl_gaps_sum_to_decode_time_with_preemptions():
    """Σ gaps of a request = finish − first token, preemptions (re-prefill gaps) included."""
    from sim.recorder import Recorder
    from sim.run import simulate
    from tests.sim.simutil import config

    kept = []

    class Keep(Recorder):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            kept.append(self)

    import sim.wiring

    cfg = config("workload.num_requests=150", "workload.rate=60", "server.kv_tokens=6000")
    orig = sim.wiring.Recorder
    sim.wiring.Recorder = Keep
    try:
        res = simulate(cfg)
    finally:
        sim.wiring.Recorder = orig
    rec, req = kept[0], res.requests
    assert res.summary["preemptions"] > 0
    assert rec.itl.total == pytest.approx(np.nansum(req["finish_s"] - req["first_token_s"]), rel=1e-9)
    assert rec.itl.weight >= req["decode_steps"].sum()


def test_export_keys_and_units_against_summary(run_dir, tmp_path, capsys):
    out = tmp_path / "vllm.json"
    assert specbed(["export", str(run_dir), "--format", "vllm-bench", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    s = json.loads((run_dir / "summary.json").read_text())
    assert VLLM_KEYS <= set(res)
    # the run's window is the whole run (warmup = drain = 0): same requests, seconds → ms
    for metric, key in (("ttft", "ttft_s"), ("tpot", "tpot_s"), ("e2el", "e2e_s"), ("itl", "itl_s")):
        assert res[f"mean_{metric}_ms"] == pytest.approx(s[f"{key}_mean"] * 1e3, rel=1e-6)
        assert res[f"median_{metric}_ms"] == pytest.approx(s[f"{key}_p50"] * 1e3, rel=1e-6)
        assert res[f"p99_{metric}_ms"] == pytest.approx(s[f"{key}_p99"] * 1e3, rel=1e-6)
    assert res["std_itl_ms"] == pytest.approx(s["itl_s_std"] * 1e3)
    assert res["completed"] == s["requests_completed"]
    assert res["total_output_tokens"] == s["output_tokens"]
    assert res["total_input_tokens"] == s["input_tokens"]
    assert res["output_throughput"] == pytest.approx(res["total_output_tokens"] / res["duration"])
    assert res["spec_decode_num_drafts"] == s["spec_drafts"]
    assert res["spec_decode_acceptance_length"] == pytest.approx(s["spec_acceptance_length"])
    rates = res["spec_decode_per_position_acceptance_rates"]
    assert res["spec_decode_acceptance_length"] == pytest.approx(1 + sum(rates))
    assert all(a >= b for a, b in zip(rates, rates[1:]))


def test_compare_prints_relative_errors(run_dir, tmp_path, capsys):
    out = tmp_path / "vllm.json"
    assert specbed(["export", str(run_dir), "--out", str(out)]) == 0
    real = json.loads(out.read_text())
    real["mean_ttft_ms"] *= 2.0
    del real["spec_decode_acceptance_length"]
    out.write_text(json.dumps(real))
    capsys.readouterr()
    assert specbed(["compare", str(run_dir), str(out)]) == 0
    text = capsys.readouterr().out
    ttft = next(line for line in text.splitlines() if line.startswith("TTFT mean"))
    assert ttft.endswith("-50.0%")
    assert next(line for line in text.splitlines() if line.startswith("acceptance length")).endswith("n/a")
    assert "+0.0%" in next(line for line in text.splitlines() if line.startswith("ITL p99"))


def test_timeline_structure_and_event_count(run_dir):
    doc = json.loads((run_dir / "timeline.json").read_text())
    s = json.loads((run_dir / "summary.json").read_text())
    events = doc["traceEvents"]
    steps = [e for e in events if e["ph"] == "X"]
    assert len(steps) == s["steps"] == doc["otherData"]["steps"]
    assert {e["pid"] for e in steps} == {0, 1}
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    assert names == {0: "replica 0", 1: "replica 1"}
    args = {
        "requests",
        "verify_tokens",
        "prefill_tokens",
        "drafted",
        "verified_drafts",
        "accepted",
        "emitted",
        "cost_us",
    }
    for e in steps:
        assert set(e["args"]) == args and e["dur"] > 0 and e["ts"] >= 0 and e["tid"] == 0
        # the step's bill by part (`specsched.stepcost.PARTS`) adds up to its duration
        assert set(e["args"]["cost_us"]) == set(PARTS)
        assert sum(e["args"]["cost_us"].values()) == pytest.approx(e["dur"], abs=0.01)
    assert sum(e["args"]["emitted"] for e in steps) == s["output_tokens"]
    assert sum(e["args"]["accepted"] for e in steps) == s["spec_accepted_tokens"]
    counters = [e for e in events if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"queue", "kv"}
    assert len(counters) == 2 * len(steps)
    # steps of one replica never overlap (Perfetto nests overlapping slices)
    for pid in (0, 1):
        mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in steps if e["pid"] == pid)
        assert all(b[0] >= a[1] - 1e-6 for a, b in zip(mine, mine[1:]))
    assert not list(run_dir.glob(".*tmp*"))


def test_timeline_small_flushes_stream(tmp_path):
    """Flushing every step writes the same document as one flush at the end."""
    from sim.config_io import load_config
    from sim.run import simulate
    from sim.timeline import TimelineWriter

    cfg = load_config(None, ["workload.num_requests=20", "acceptance.sts_samples=256"])
    docs = []
    for every in (1, 10_000):
        w = TimelineWriter(tmp_path / f"t{every}.json", gamma=7, flush_every=every)
        simulate(cfg, observer=w)
        docs.append(json.loads(w.close().read_text()))
    assert docs[0] == docs[1]


def test_bad_input_one_line_exit_2(run_dir, tmp_path, capsys):
    capsys.readouterr()
    assert specbed(["run", *SMALL, "--timeline", "--quiet"]) == 2
    assert "--timeline" in capsys.readouterr().err
    assert specbed(["export", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RUN_DIR" in err
    bad = tmp_path / "run"
    bad.mkdir()
    (bad / "summary.json").write_text((run_dir / "summary.json").read_text())
    (bad / "requests.csv").write_text("id,arrival_s\n0,1.0\n")
    assert specbed(["export", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "requests.csv:1" in err and "input_tokens" in err
    real = tmp_path / "real.json"
    real.write_text('{"mean_ttft_ms": "fast"}')
    assert specbed(["compare", str(run_dir), str(real)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "real.json" in err and "mean_ttft_ms" in err
    real.write_text("[1, 2]")
    assert specbed(["compare", str(run_dir), str(real)]) == 2
    assert "real.json" in capsys.readouterr().err
