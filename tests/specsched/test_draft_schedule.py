"""`specbed plan --draft-schedule`: the batch-size -> depth table, its JSON, and bad flags (exit 2)."""

import json

import pytest

from specbed.cli import main

SATURATING = "tokens,seconds\n1,0.01\n256,0.01\n1024,0.04\n"


def test_schedule_turns_drafting_off_past_the_knee(tmp_path, capsys):
    csv = tmp_path / "sat.csv"
    csv.write_text(SATURATING)
    out = tmp_path / "schedule.json"
    args = ["plan", "--draft-schedule", "--cost", str(csv), "--cost-mode", "linear", "--layers", "61"]
    assert main([*args, "--batch-sizes", "8,256", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "batch" in text and f"wrote {out}" in text
    doc = json.loads(out.read_text())
    assert doc["gamma"] == 7 and doc["drafter"] == "dspark"
    light, heavy = doc["schedule"]
    assert (light["batch_size"], light["k"]) == (8, 7)
    assert (heavy["batch_size"], heavy["k"], heavy["verify_mean"]) == (256, 0, 0.0)
    # adaptive is never below its own fallbacks in the planner's estimate
    for row in doc["schedule"]:
        assert row["theta_adaptive"] >= max(row["theta_none"], row["theta_full"]) * (1 - 1e-9)


def test_builtin_table_and_curves_file(tmp_path, capsys):
    curves = tmp_path / "c.json"
    flat = [0.8] * 7
    curves.write_text(
        json.dumps({"version": 2, "curves": {"dspark": {"chat": flat, "math": flat, "code": flat}}})
    )
    argv = ["plan", "--draft-schedule", "--cost", "h200-v4pro", "--curves", str(curves), "--batch-sizes", "4"]
    assert main(argv) == 0
    assert "7/7/7" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--draft-schedule"], "field '--cost'"),
        (["--draft-schedule", "--cost", "nope"], "field '--cost': unknown cost table"),
        (["--draft-schedule", "--cost", "{csv}"], "field '--layers'"),
        (["--draft-schedule", "--cost", "h200-v4flash", "--gamma", "9"], "field '--gamma'"),
        (["--draft-schedule", "--cost", "h200-v4flash", "--batch-sizes", "0"], "--batch-sizes"),
        (["--draft-schedule", "--cost", "h200-v4flash", "--curves", "{bad}"], "bad.json:1"),
        (["--json", "x.json"], "--json needs --draft-schedule"),
    ],
)
def test_bad_flags_give_one_line_and_exit_2(tmp_path, capsys, argv, needle):
    csv = tmp_path / "sat.csv"
    csv.write_text(SATURATING)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    argv = [a.format(csv=csv, bad=bad) for a in argv]
    assert main(["plan", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert "Traceback" not in err
