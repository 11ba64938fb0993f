"""Measured request-step samples: the engine records what its policy saw and what was accepted, the curves
file carries them, and the simulator's empirical model replays exactly those rows."""

import numpy as np
import pytest

from engine.measure.curves import build_curves, parse_map
from engine.measure.evaluate import EvalConfig, evaluate
from engine.measure.profile import ProfileConfig
from engine.measure.stats import requests_for
from specsched.contracts import save_curves
from twin.cli import measurement_requests, parse_args

MAP = "eagle3=eagle1,dflash=dflash1,dspark=dspark1"


def test_samples_reach_the_simulator_unchanged(tiny_bundle, tmp_path):
    from sim.curves import load_curves
    from sim.empirical import EmpiricalModel

    bundle, corpus = tiny_bundle
    res = evaluate(bundle, corpus, EvalConfig(prompts=3, prompt_len=10, new_tokens=20, gamma=4))
    path = tmp_path / "curves.json"
    save_curves(build_curves(res, parse_map(MAP)), path)
    curves = load_curves(path)
    assert curves.version == 2
    for sim_name, eng in parse_map(MAP).items():
        got = curves.samples_for(sim_name)
        for eng_dom, sim_dom in (("prose", "chat"), ("math", "math"), ("code", "code")):
            conf, acc, rid, pos = res["drafters"][eng]["_samples"][eng_dom]
            np.testing.assert_allclose(got[sim_dom].conf, np.clip(conf, 0, 1), atol=1e-6)
            np.testing.assert_array_equal(got[sim_dom].accepted, acc)
            np.testing.assert_array_equal(got[sim_dom].group, rid)
            np.testing.assert_array_equal(got[sim_dom].position, pos)
            # tokens emitted before the step: rising within a request by at least accepted + 1 (steps that
            # were not full are left out)
            for g in np.unique(rid):
                p, a = pos[rid == g], acc[rid == g]
                assert p[0] >= 1 and np.all(np.diff(p) >= a[:-1] + 1)
            assert acc.max() <= 4 and conf.shape[1] == 4
    # The DSpark rows are the STS-calibrated confidences the policy saw, not the raw head's.
    raw, _ = res["drafters"]["dspark1"]["_raw"]
    seen = np.concatenate([res["drafters"]["dspark1"]["_samples"][d][0] for d in ("code", "prose", "math")])
    assert raw.shape == seen.shape
    model = EmpiricalModel(np.array([curves.get("dspark", d) for d in ("chat", "math", "code")]), got)
    assert model.report["samples"] == [got[d].accepted.size for d in ("chat", "math", "code")]
    no_samples = build_curves(res, parse_map(MAP), max_samples=0)
    assert "samples" not in no_samples.to_json()


def test_evaluate_on_given_requests_and_measurement_requests(tiny_bundle):
    bundle, corpus = tiny_bundle
    args = parse_args(["--prompt-len", "10", "--output-len", "16", "--gamma", "3"])
    reqs = requests_for(corpus, "math", 2, 10, 16, seed=5)
    doms = ["math", "math"]
    given = measurement_requests(reqs, doms, corpus, args)
    # --curves-noise same (default): the workload's own requests, noise seeds included (common random numbers)
    assert [r.rid for r in given["math"]] == [0, 1] and all(
        a.seed == b.seed and a.prompt == b.prompt for a, b in zip(given["math"], reqs)
    )
    other = measurement_requests(reqs, doms, corpus, parse_args(["--curves-noise", "other"]))
    assert all(a.seed != b.seed and a.prompt == b.prompt for a, b in zip(other["math"], reqs))
    assert len(given["code"]) == 4 and len(given["prose"]) == 4  # absent domains get fresh prompts
    res = evaluate(bundle, corpus, EvalConfig(gamma=3), ["dspark1"], requests=given)
    assert set(np.unique(res["drafters"]["dspark1"]["_samples"]["math"][2])) <= {0, 1}
    with pytest.raises(ValueError, match="every domain"):
        evaluate(bundle, corpus, EvalConfig(gamma=3), ["dspark1"], requests={"math": reqs})
    with pytest.raises(ValueError, match="statistic"):
        ProfileConfig(statistic="mode")


def test_fidelity_refuses_a_curves_file_without_samples(tiny_dir, tmp_path, capsys):
    import json

    from specbed.cli import main as specbed

    doc = {"version": 1, "curves": {"dspark": {d: [0.5, 0.5, 0.5] for d in ("chat", "math", "code")}}}
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(doc))
    argv = ["fidelity", "--checkpoints", str(tiny_dir[0]), "--drafter", "dspark1", "--curves", str(path)]
    rc = specbed([*argv, "--gamma", "3", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "v1.json" in err and "samples" in err and len(err.strip().splitlines()) == 1


def test_profile_measures_the_join_cost_with_extra_requests(tiny_bundle, tmp_path):
    from engine.measure.profile import profile
    from specsched.contracts import read_profile

    bundle, corpus = tiny_bundle
    cfg = ProfileConfig(
        requests=(2,),
        gamma=2,
        prompt_len=10,
        new_tokens=12,
        drafter="dspark1",
        extra_requests=3,
        statistic="mean",
    )
    prof = profile(bundle, corpus, cfg)
    assert set(prof.join_s) == {2} and np.isfinite(prof.join_s[2])
    prof.write(tmp_path / "cost.csv")
    back = read_profile(tmp_path / "cost.csv")
    assert back.join_s[2] == pytest.approx(prof.join_s[2], rel=1e-5)
    assert back.draft_s[2] == pytest.approx(prof.draft_s[2], rel=1e-5)
    plain = profile(
        bundle, corpus, ProfileConfig(requests=(2,), gamma=2, prompt_len=10, new_tokens=12, drafter="dspark1")
    )
    assert plain.join_s == {} and "join_seconds" not in plain.to_csv()
    with pytest.raises(ValueError, match="extra_requests"):
        ProfileConfig(extra_requests=-1)
