"""The empirical acceptance model (resampled engine request-steps), version-2 curves files with samples, and
the server knobs fidelity needs: policy_cost (the policy plans with one table, steps are timed by another)
and prefill_request_seconds (a per-joining-request overhead)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import sim
from sim.acceptance import AcceptanceConfig
from sim.config import DrafterConfig, PolicyConfig, ServerConfig, SimConfig, WorkloadConfig
from sim.curves import DOMAINS, Curves, Samples, load_curves, parse_curves, save_curves
from sim.empirical import EmpiricalModel
from specsched.io.errors import InputError

GAMMA = 4


def _bank(seed: int = 0, rows: int = 300, groups: int = 5) -> dict[str, Samples]:
    """Synthetic measured steps per domain: confidences and accepted drafts that depend on them."""
    rng = np.random.default_rng(seed)
    out = {}
    for d, _ in enumerate(DOMAINS):
        conf = rng.uniform(0.3 + 0.1 * d, 1.0, (rows, GAMMA))
        u = rng.random((rows, GAMMA))
        accepted = np.argmax(np.concatenate([u >= conf, np.ones((rows, 1), bool)], 1), axis=1)
        out[DOMAINS[d]] = Samples(np.round(conf, 6), accepted.astype(np.int64), rng.integers(0, groups, rows))
    return out


def _curves_doc(bank: dict[str, Samples]) -> dict:
    curves = {}
    for dom, s in bank.items():
        surv = (s.accepted[:, None] >= np.arange(1, GAMMA + 1)).mean(0)
        prev = np.concatenate([[1.0], surv[:-1]])
        curves[dom] = [float(x) for x in surv / np.maximum(prev, 1e-12)]
    return {
        "version": 2,
        "curves": {"dspark": curves},
        "samples": {"dspark": {dom: s.to_json() for dom, s in bank.items()}},
    }


def _matrix(doc: dict) -> np.ndarray:
    return np.array([doc["curves"]["dspark"][d] for d in DOMAINS])


def test_samples_round_trip(tmp_path):
    doc = _curves_doc(_bank())
    c = parse_curves(doc, "x.json")
    path = tmp_path / "c.json"
    save_curves(c, path)
    back = load_curves(path)
    for dom in DOMAINS:
        a, b = c.samples_for("dspark")[dom], back.samples_for("dspark")[dom]
        np.testing.assert_array_equal(a.conf, b.conf)
        np.testing.assert_array_equal(a.accepted, b.accepted)
        np.testing.assert_array_equal(a.group, b.group)
    assert back.samples_for("dflash") is None
    v1 = Curves(curves={"dspark": doc["curves"]["dspark"]}, version=1)
    assert parse_curves(v1.to_json()).samples == {}


def _mutated(path, value):
    doc = _curves_doc(_bank(rows=20))
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (["samples", "dspark", "math", "conf", 3], [0.5] * (GAMMA - 1), "samples.dspark.math.conf[3]"),
        (["samples", "dspark", "math", "conf", 0, 1], 1.5, "samples.dspark.math.conf[0][1]"),
        (["samples", "dspark", "code", "accepted", 2], GAMMA + 1, "samples.dspark.code.accepted[2]"),
        (["samples", "dspark", "code", "accepted", 2], 1.0, "samples.dspark.code.accepted[2]"),
        (["samples", "dspark", "chat", "group", 0], -1, "samples.dspark.chat.group[0]"),
        (["samples", "dspark", "chat", "group"], [0], "samples.dspark.chat.group"),
        (["samples", "dspark", "chat", "extra"], [], "samples.dspark.chat.extra"),
        (["samples", "dspark", "chat"], KeyError, "samples.dspark.chat"),
        (["samples", "dspark", "math", "conf"], [], "samples.dspark.math.conf"),
        (["samples", "eagle3"], {}, "samples.eagle3"),
        (["version"], 1, "samples"),
    ],
)
def test_bad_samples_name_the_field(path, value, field):
    with pytest.raises(InputError) as err:
        parse_curves(_mutated(path, value), "bad.json")
    assert err.value.field == field and err.value.file == "bad.json"


def test_step_replays_measured_rows_and_truth_gives_their_outcome():
    bank = _bank()
    model = EmpiricalModel(_matrix(_curves_doc(bank)), bank)
    rng = np.random.default_rng(1)
    dom = np.repeat(np.arange(3), 400)
    lat = model.request_latent(dom.size, rng)
    true, conf = model.step(dom, lat, rng, None)
    assert set(np.unique(true)) <= {0.0, 1.0}
    for d, name in enumerate(DOMAINS):
        rows = {tuple(r) for r in bank[name].conf}
        assert all(tuple(r) in rows for r in conf[dom == d])  # the estimate is a measured confidence row
    full = model.sample_accepted(true, np.full(dom.size, GAMMA), rng)
    np.testing.assert_array_equal(full, true.sum(axis=1))
    cut = model.sample_accepted(true, np.full(dom.size, 2), rng)
    np.testing.assert_array_equal(cut, np.minimum(full, 2))


def test_all_drafts_verified_reproduces_the_samples_tau():
    bank = _bank(rows=2000, groups=40)
    model = EmpiricalModel(_matrix(_curves_doc(bank)), bank)
    rng = np.random.default_rng(2)
    dom = np.full(20000, 1)
    true, _ = model.step(dom, model.request_latent(dom.size, rng), rng, None)
    tau = 1 + model.sample_accepted(true, np.full(dom.size, GAMMA), rng).mean()
    assert tau == pytest.approx(model.report["tau_samples"][1], abs=0.05)
    assert model.report["samples"] == [2000, 2000, 2000]
    assert 0 <= model.report["ece_calibrated"] <= 1


def test_in_order_groups_replay_the_ith_request_of_each_domain():
    bank = _bank(groups=3)
    model = EmpiricalModel(_matrix(_curves_doc(bank)), bank, in_order=True)
    dom = np.array([0, 1, 0, 0, 2, 0])
    lat = model.request_latent(dom.size, np.random.default_rng(0), dom)
    g = np.floor(lat * 3).astype(int)
    np.testing.assert_array_equal(g[dom == 0], [0, 1, 2, 0])  # cycling over the domain's 3 groups
    rng = np.random.default_rng(3)
    group_rows = np.sort(bank["chat"].group)  # chat is domain 0; rows of group 1 only for request 2
    true, conf = model.step(np.full(50, 0), np.full(50, lat[2]), rng, None)
    members = {tuple(r) for r in bank["chat"].conf[bank["chat"].group == np.unique(group_rows)[1]]}
    assert all(tuple(r) in members for r in conf)
    with pytest.raises(ValueError):
        model.request_latent(3, np.random.default_rng(0))


def _config(tmp_path, **acc) -> SimConfig:
    path = tmp_path / "curves.json"
    path.write_text(json.dumps(_curves_doc(_bank(rows=400, groups=8))))
    return SimConfig(
        seed=5,
        workload=WorkloadConfig(
            kind="closed", concurrency=8, num_requests=120, input_tokens=16, output_tokens=64, domain="mix"
        ),
        drafter=DrafterConfig(name="dspark", gamma=GAMMA, curves=str(path)),
        policy=PolicyConfig(name="fixed", k=GAMMA),
        server=ServerConfig(cost="h200-dense8b", max_num_seqs=8),
        acceptance=AcceptanceConfig(model="empirical", **acc),
    )


def test_simulator_with_empirical_model_is_deterministic_and_matches_the_samples(tmp_path):
    cfg = _config(tmp_path)
    a, b = sim.simulate(cfg), sim.simulate(cfg)
    assert a.summary == b.summary
    taus = a.confidence["tau_samples"]
    assert min(taus) - 0.3 < a.summary["tau_mean"] < max(taus) + 0.3
    ordered = sim.simulate(replace(cfg, acceptance=replace(cfg.acceptance, groups="in_order")))
    assert ordered.summary["tau_mean"] == pytest.approx(a.summary["tau_mean"], abs=0.3)
    dspark = sim.simulate(replace(cfg, policy=PolicyConfig(name="dspark")))
    assert dspark.summary["mean_verify_tokens_per_request_step"] <= 1 + GAMMA


def test_empirical_without_samples_is_a_config_error(tmp_path):
    cfg = _config(tmp_path)
    v1 = tmp_path / "v1.json"
    doc = json.loads((tmp_path / "curves.json").read_text())
    del doc["samples"]
    v1.write_text(json.dumps(doc))
    for drafter in (replace(cfg.drafter, curves=str(v1)), replace(cfg.drafter, curves=None)):
        with pytest.raises(InputError) as err:
            sim.simulate(replace(cfg, drafter=drafter))
        assert err.value.field == "acceptance.model"
    with pytest.raises(InputError) as err:
        AcceptanceConfig(model="bootstrap")
    assert err.value.field == "acceptance.model"
    with pytest.raises(InputError) as err:
        AcceptanceConfig(groups="sorted")
    assert err.value.field == "acceptance.groups"


def test_policy_cost_plans_but_does_not_time(tmp_path):
    flat, steep = tmp_path / "flat.csv", tmp_path / "steep.csv"
    flat.write_text("tokens,seconds\n1,0.010\n512,0.0102\n")
    steep.write_text("tokens,seconds\n1,0.010\n512,0.5\n")
    base = replace(
        _config(tmp_path),
        policy=PolicyConfig(name="dspark"),
        server=ServerConfig(cost=str(flat), cost_mode="linear", layers=4, max_num_seqs=8),
    )
    own = sim.simulate(base).summary
    planned = sim.simulate(replace(base, server=replace(base.server, policy_cost=str(steep)))).summary
    # Planning with dear tokens admits fewer; the steps are still timed by the cheap table.
    assert planned["mean_verify_tokens_per_request_step"] < own["mean_verify_tokens_per_request_step"]
    assert planned["step_s_mean"] <= own["step_s_mean"] * 1.01
    with pytest.raises(InputError) as err:
        sim.simulate(replace(base, server=replace(base.server, policy_cost=str(tmp_path / "none.csv"))))
    assert err.value.field in ("cost.policy_table", None) and "none.csv" in str(err.value)
    with pytest.raises(InputError) as err:
        ServerConfig(policy_cost="")
    assert err.value.field == "cost.policy_table"


def test_prefill_request_seconds_charges_each_prefilling_request(tmp_path):
    flat = tmp_path / "flat.csv"
    flat.write_text("tokens,seconds\n1,0.010\n512,0.010\n")
    base = replace(
        _config(tmp_path),
        policy=PolicyConfig(name="ar"),
        server=ServerConfig(cost=str(flat), cost_mode="linear", layers=4, max_num_seqs=8),
        drafter=DrafterConfig(name="none", gamma=0),
        acceptance=AcceptanceConfig(),
    )
    plain = sim.simulate(base)
    dear = sim.simulate(replace(base, server=replace(base.server, prefill_request_seconds=0.004)))
    # 120 requests each prefill once: 120 × 4 ms more busy time; token counts are unchanged.
    busy = plain.summary["step_s_mean"] * plain.summary["steps"]
    busy_dear = dear.summary["step_s_mean"] * dear.summary["steps"]
    assert dear.summary["steps"] == plain.summary["steps"]
    assert busy_dear - busy == pytest.approx(120 * 0.004, rel=1e-6)
    for bad in (-0.001, float("nan")):
        with pytest.raises(InputError) as err:
            ServerConfig(prefill_request_seconds=bad)
        assert err.value.field == "cost.prefill_request_seconds"


def test_in_order_replay_near_the_position():
    """With positions, an in-order request draws its step among the measured steps near its text position."""
    from sim.empirical import WINDOW

    bank = {}
    for d in DOMAINS:
        conf = np.tile(np.linspace(0.1, 0.9, 9)[:, None], (1, GAMMA))
        pos = np.arange(9) * 2 * WINDOW  # rows 2·WINDOW apart: only one is ever within the window
        bank[d] = Samples(conf, np.arange(9) % (GAMMA + 1), np.zeros(9, dtype=np.int64), pos)
    model = EmpiricalModel(np.full((len(DOMAINS), GAMMA), 0.5), bank, in_order=True)
    assert model.by_position
    rng = np.random.default_rng(0)
    dom = np.zeros(4, dtype=np.int64)
    lat = model.request_latent(4, rng, dom)
    where = np.array([0, 2 * WINDOW + 3, 4 * WINDOW - 1, 10_000])
    _, est = model.step(dom, lat, rng, None, position=where)
    np.testing.assert_allclose(est[:, 0], bank[DOMAINS[0]].conf[[0, 1, 2, 8], 0])
    assert not EmpiricalModel(np.full((len(DOMAINS), GAMMA), 0.5), bank).by_position  # random groups: by step
