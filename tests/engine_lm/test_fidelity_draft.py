"""`specbed fidelity` in both draft modes: the arms, the measured draft cost by drafting requests, the
engine's drafted counts, a tiny adaptive run through every step, and a bad --draft (exit 2)."""

import json

import numpy as np

from specbed.cli import main as specbed
from specsched import CostTable
from twin.cli import arms, parse_args
from twin.profile import write_draft_cost


def test_arms_cover_both_modes_and_ar_has_no_adaptive_arm():
    a = parse_args(["--policies", "ar,fixed,dspark", "--draft", "both", "--fixed-k", "2"])
    labels = [x[0] for x in arms(a)]
    assert labels == ["ar", "fixed", "dspark", "fixed+adaptive", "dspark+adaptive"]
    assert dict((x[0], x[2]) for x in arms(a))["fixed+adaptive"] == {"k": 2, "draft": "adaptive"}
    assert [x[0] for x in arms(parse_args(["--draft", "full"]))] == ["ar", "fixed", "dspark"]


def test_bad_draft_flag_is_one_line_exit_2(capsys):
    assert specbed(["fidelity", "--draft", "sometimes"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--draft" in err and "Traceback" not in err


def test_draft_cost_is_exact_at_n_and_sloped_by_the_tail(tmp_path):
    path = write_draft_cost({2: 0.002, 4: 0.003, 8: 0.005}, 8, tmp_path / "d.csv")
    t = CostTable.from_csv(path, mode="linear", key="requests")
    assert np.isclose(t.latency(8), 0.005) and t.latency(1) < t.latency(4) < t.latency(8)
    one = CostTable.from_csv(
        write_draft_cost({4: 0.004}, 4, tmp_path / "e.csv"), mode="linear", key="requests"
    )
    assert np.isclose(one.latency(2), 0.002)  # only R = n measured: proportional to the drafting requests


def test_adaptive_arm_goes_through_every_fidelity_step(tiny_dir, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["fidelity", "--checkpoints", str(tiny_dir[0]), "--drafter", "dspark1", "--policies", "dspark"]
    argv += ["--draft", "adaptive", "--requests", "6", "--concurrency", "3", "--prompt-len", "8"]
    argv += ["--output-len", "12", "--gamma", "3", "--eval-prompts", "1", "--attempts", "1", "--quiet"]
    assert specbed(argv + ["--out", str(out)]) == 0
    assert "dspark+adaptive" in capsys.readouterr().out
    rep = json.loads((out / "fidelity.json").read_text())
    assert list(rep["policies"]) == ["dspark+adaptive"] and rep["args"]["draft"] == "adaptive"
    assert len(rep["stale_prior"]) == 3 and min(rep["stale_prior"]) > 0  # the population curve, not 0
    head = (out / "draft_dspark+adaptive.csv").read_text().splitlines()[1]
    assert head == "requests,seconds"
