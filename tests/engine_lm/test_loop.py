"""The engine ↔ simulator loop on the tiny checkpoints: exported curves and cost tables load in the
simulator, STS never raises ECE on its fitting data, and `specbed fidelity` runs end to end."""

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.lm.drafters import runtime_drafter
from engine.loop import EngineConfig
from engine.measure.curves import build_curves, parse_map
from engine.measure.evaluate import EvalConfig, evaluate, format_report, write_outputs
from engine.measure.profile import ProfileConfig, mixed_requests, profile
from engine.measure.rollout import run_rollout
from engine.measure.stats import confidence_quality, fit_sts_measured, full_conf
from specbed.cli import main as specbed
from specsched.contracts import save_curves
from specsched.measured import read_measured

MAP = "eagle3=eagle1,dflash=dflash1,dspark=dspark1"


def _eval(bundle, corpus):
    return evaluate(bundle, corpus, EvalConfig(prompts=3, prompt_len=10, new_tokens=20, gamma=4))


def test_exported_curves_and_cost_load_in_the_simulator(tiny_bundle, tmp_path):
    import sim
    from sim.config import DrafterConfig, PolicyConfig, ServerConfig, SimConfig, WorkloadConfig
    from sim.curves import load_curves
    from specsched import CostTable

    bundle, corpus = tiny_bundle
    res = _eval(bundle, corpus)
    assert "Table 1 layout" in format_report(res)
    files = write_outputs(res, tmp_path / "eval")
    assert (tmp_path / "eval" / "reliability_dspark1.png").stat().st_size > 1000 and len(files) == 4
    path = tmp_path / "curves.json"
    save_curves(build_curves(res, parse_map(MAP)), path)
    curves = load_curves(path)
    for d in ("chat", "math", "code"):
        assert np.allclose(
            curves.get("dspark", d),
            [
                0.0 if v is None else v
                for v in res["drafters"]["dspark1"][{"chat": "prose"}.get(d, d)]["curve"]
            ],
        )
    assert set(curves.confidence_stats("dspark", "math")) >= {"ece_raw", "ece_calibrated", "temperatures"}
    prof = profile(
        bundle, corpus, ProfileConfig(requests=(2,), gamma=3, prompt_len=10, new_tokens=12, drafter="dspark1")
    )
    prof.write(tmp_path / "cost.csv")
    table = CostTable.from_csv(tmp_path / "cost.csv")
    assert list(table.tokens) == [2, 4, 6, 8] and np.all(table.seconds > 0)
    prof.write_steps(tmp_path / "steps.csv")  # specbed's measured-step CSV, for `specbed cost fit`
    steps = read_measured([tmp_path / "steps.csv"])
    assert sorted(steps.tokens[steps.phase == "decode"].tolist()) == [2, 4, 6, 8]
    assert set(steps.phase) == {"decode", "draft"} and np.all(steps.seconds > 0)
    cfg = SimConfig(
        workload=WorkloadConfig(
            kind="closed", concurrency=2, num_requests=6, input_tokens=10, output_tokens=12, domain="mix"
        ),
        drafter=DrafterConfig(name="dspark", gamma=4, curves=str(path)),
        policy=PolicyConfig("dspark"),
        server=ServerConfig(cost=str(tmp_path / "cost.csv"), layers=2, max_num_seqs=2),
    )
    assert sim.simulate(cfg).summary["requests_completed"] == 6


def test_sts_never_raises_ece_on_its_fitting_data(tiny_bundle):
    bundle, corpus = tiny_bundle
    target = bundle.target()
    drafter = runtime_drafter(bundle.net("dspark1"), target, slots=6, max_len=48)
    ro, _ = run_rollout(
        target,
        drafter,
        EngineConfig(gamma=4, policy="fixed", policy_params={"k": 4}, max_running=6),
        mixed_requests(corpus, 6, 10, 30, seed=5),
        max_len=48,
    )
    conf, acc = full_conf(ro)
    q = confidence_quality(conf, acc, fit_sts_measured(conf, acc))
    assert conf.shape[0] > 10 and q["ece_calibrated_mean"] <= q["ece_raw_mean"] + 1e-12


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.floats(0.05, 0.95), st.floats(-2.0, 2.0))
def test_sts_never_raises_ece_hypothesis(seed, level, skew):
    rng = np.random.default_rng(seed)
    n, gamma = 300, 4
    true = np.clip(rng.beta(4 * level + 0.5, 4 * (1 - level) + 0.5, size=(n, gamma)), 1e-3, 1 - 1e-3)
    acc = np.argmin(np.concatenate([rng.random((n, gamma)) < true, np.zeros((n, 1), bool)], axis=1), axis=1)
    conf = 1 / (1 + np.exp(-(np.log(true / (1 - true)) * np.exp(skew))))
    q = confidence_quality(conf, acc, fit_sts_measured(conf, acc))
    assert q["ece_calibrated_mean"] <= q["ece_raw_mean"] + 1e-12


def test_fidelity_end_to_end(tiny_dir, tmp_path, capsys):
    out = tmp_path / "fid"
    rc = specbed(
        [
            "fidelity",
            "--checkpoints",
            str(tiny_dir[0]),
            "--drafter",
            "dspark1",
            "--concurrency",
            "2",
            "--requests",
            "6",
            "--prompt-len",
            "8",
            "--output-len",
            "14",
            "--gamma",
            "3",
            "--eval-prompts",
            "2",
            "--draft",
            "full",  # the adaptive arms: tests/engine_lm/test_fidelity_draft.py
            "--out",
            str(out),
            "--quiet",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0, text
    for pol in ("ar", "fixed", "dspark"):
        assert f"\n{pol} " in text
    assert "KS(TPOT)" in text and "throughput tok/s" in text
    report = json.loads((out / "fidelity.json").read_text())
    assert set(report["policies"]) == {"ar", "fixed", "dspark"}
    rc = specbed(
        [
            "fidelity",
            "--checkpoints",
            str(tiny_dir[0]),
            "--drafter",
            "dspark1",
            "--concurrency",
            "2",
            "--requests",
            "4",
            "--prompt-len",
            "8",
            "--output-len",
            "10",
            "--gamma",
            "3",
            "--policies",
            "fixed",
            "--cost",
            str(out / "cost_fixed.csv"),
            "--curves",
            str(out / "curves.json"),
            "--out",
            str(tmp_path / "again"),
            "--quiet",
        ]
    )
    assert rc == 0
