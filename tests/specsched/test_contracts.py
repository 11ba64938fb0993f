"""specsched.contracts: the domain alias, the curves writer's side, and the measured-profile CSV."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sim.curves
import specsched.contracts.curves as contract_curves
from specsched.contracts import (
    DOMAINS,
    ENGINE_DOMAINS,
    Curves,
    Profile,
    Samples,
    clipped,
    engine_domain,
    load_curves,
    read_profile,
    save_curves,
    sim_domain,
)
from specsched.io.errors import InputError


def test_domain_alias_round_trips_and_refuses_unknown_names():
    assert sim_domain("prose") == "chat" and engine_domain("chat") == "prose"
    assert sorted(map(sim_domain, ENGINE_DOMAINS)) == sorted(DOMAINS)
    assert all(sim_domain(engine_domain(d)) == d for d in DOMAINS)
    with pytest.raises(InputError, match="field 'domain'"):
        sim_domain("chat")
    with pytest.raises(InputError, match="field 'domain'"):
        engine_domain("prose")


def test_sim_curves_is_the_contract_not_a_copy():
    assert sim.curves.parse_curves is contract_curves.parse_curves
    assert sim.curves.Curves is Curves and sim.curves.DOMAINS is DOMAINS


def test_samples_measured_thins_evenly_and_clips():
    conf = np.linspace(-0.5, 1.5, 100)[:, None].repeat(3, 1)
    s = Samples.measured(conf, np.arange(100) % 4, np.arange(100) // 10, max_samples=10)
    assert s.conf.shape == (10, 3) and s.accepted.size == s.group.size == 10
    assert s.group[0] == 0 and s.group[-1] == 9 and s.conf.min() == 0.0 and s.conf.max() == 1.0
    assert Samples.measured(conf[:5], np.zeros(5), np.zeros(5)).conf.shape == (5, 3)
    assert clipped([0.5, 1.2, -1]) == (0.5, 1.0, 0.0) and clipped([0.5, float("nan")]) is None


def test_written_curves_read_back_equal_and_a_bad_one_is_never_written(tmp_path):
    samples = {
        d: Samples.measured(np.full((4, 2), 0.7), np.array([0, 1, 2, 2]), np.arange(4)) for d in DOMAINS
    }
    curves = Curves(
        {"dspark": {d: (0.8, 0.7) for d in DOMAINS}}, samples={"dspark": samples}, description="t"
    )
    save_curves(curves, tmp_path / "c.json")
    back = load_curves(tmp_path / "c.json")
    assert back == curves and back.version == 2
    np.testing.assert_array_equal(back.samples_for("dspark")["math"].accepted, [0, 1, 2, 2])
    bad = Curves({"dspark": {"chat": (0.8,), "math": (1.5,)}})  # a rate above 1
    with pytest.raises(InputError, match=r"bad\.json: field 'curves\.dspark\.math\[0\]'"):
        save_curves(bad, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def test_profile_csv_round_trip(tmp_path):
    prof = Profile(
        np.array([8, 16, 24]), np.array([0.01, 0.015, 0.02]), {8: 0.004}, note="cpu", join_s={8: 1e-3}
    )
    prof.write(tmp_path / "p.csv")
    back = read_profile(tmp_path / "p.csv")
    np.testing.assert_array_equal(back.tokens, prof.tokens)
    np.testing.assert_allclose(back.seconds, prof.seconds)
    assert back.draft_s == {8: 0.004} and back.join_s == {8: 1e-3} and back.note == "cpu"
    assert back.table(layers=2).latency(16) == pytest.approx(0.015)
    (tmp_path / "plain.csv").write_text("tokens,seconds\n1,0.5\n")
    plain = read_profile(tmp_path / "plain.csv")
    assert plain.draft_s == {} and plain.join_s == {}


@pytest.mark.parametrize("comment", ["8=abc", "0=0.1", "8", "8=inf", "x=1"])
def test_profile_bad_comment_names_file_line_and_field(tmp_path, comment):
    path = tmp_path / "p.csv"
    path.write_text(f"# note\n# draft_seconds_by_R: {comment}\ntokens,seconds\n1,0.5\n")
    with pytest.raises(InputError, match=r"p\.csv:2: field 'draft_seconds_by_R'"):
        read_profile(path)
    path.write_text("tokens,seconds\n1,-0.5\n")
    with pytest.raises(InputError, match=r"p\.csv:2"):
        read_profile(path)


def test_profile_intake_lines_round_trip_and_refuse_negatives(tmp_path):
    prof = Profile(
        np.array([8, 16]), np.array([0.01, 0.015]), {8: 0.004}, intake_s={8: 2e-5}, intake_tokens={8: 1.5}
    )
    prof.write(tmp_path / "p.csv")
    back = read_profile(tmp_path / "p.csv")
    assert back.intake_s == {8: 2e-5} and back.intake_tokens == {8: 1.5}
    text = (
        (tmp_path / "p.csv")
        .read_text()
        .replace("draft_intake_seconds_by_R: 8=2e-05", "draft_intake_seconds_by_R: 8=-1")
    )
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(InputError, match=r"bad\.csv: field 'draft_intake_seconds_by_R'"):
        read_profile(tmp_path / "bad.csv")


def test_samples_positions_round_trip_and_are_checked(tmp_path):
    doc = {
        "version": 2,
        "curves": {"dspark": {d: [0.7, 0.6] for d in DOMAINS}},
        "samples": {
            "dspark": {
                d: {"conf": [[0.7, 0.6], [0.8, 0.5]], "accepted": [1, 2], "group": [0, 0], "position": [1, 3]}
                for d in DOMAINS
            }
        },
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    got = load_curves(path).samples_for("dspark")["math"]
    np.testing.assert_array_equal(got.position, [1, 3])
    doc["samples"]["dspark"]["math"]["position"] = [1]
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"samples\.dspark\.math\.position"):
        load_curves(path)


def test_profile_pad_line_round_trips(tmp_path):
    prof = Profile(np.array([8, 16]), np.array([0.01, 0.015]), {8: 0.004}, pad_s={8: 5e-6})
    prof.write(tmp_path / "p.csv")
    assert read_profile(tmp_path / "p.csv").pad_s == {8: 5e-6}


def test_profile_context_lines_round_trip_and_bad_ones_are_named(tmp_path):
    prof = Profile(
        np.array([8, 16]),
        np.array([0.01, 0.015]),
        {8: 0.004},
        context_verify_s={8: 5e-7},
        context_draft_s={8: 4e-7},
        context_ref=0.0,
    )
    prof.write(tmp_path / "p.csv")
    got = read_profile(tmp_path / "p.csv")
    assert (got.context_verify_s, got.context_draft_s, got.context_ref) == ({8: 5e-7}, {8: 4e-7}, 0.0)
    assert (
        read_profile_text(tmp_path, prof.to_csv().replace("# longest_context: 0\n", "")).context_ref is None
    )
    for old, new, field in (
        ("# longest_context: 0", "# longest_context: -3", "longest_context"),
        ("context_draft_seconds_by_R: 8=4e-07", "context_draft_seconds_by_R: 8=-4e-07", "context_draft"),
    ):
        with pytest.raises(InputError, match=field):
            read_profile_text(tmp_path, prof.to_csv().replace(old, new))


def read_profile_text(tmp_path, text: str):
    path = tmp_path / "q.csv"
    path.write_text(text)
    return read_profile(path)
