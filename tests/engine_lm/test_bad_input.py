"""Bad input: one line on stderr naming the file and the problem, exit code 2, no traceback."""

import json
import shutil

import pytest
import torch

from specbed.cli import main as specbed


def _one_line_error(capsys, rc, *needles):
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


def test_missing_checkpoint_dir(tmp_path, capsys):
    rc = specbed(["engine", "eval", "--checkpoints", str(tmp_path / "nope")])
    _one_line_error(capsys, rc, "nope", "checkpoint directory not found")


def test_missing_target_checkpoint(tmp_path, capsys):
    rc = specbed(["engine", "profile", "--checkpoints", str(tmp_path), "--out", str(tmp_path / "c.csv")])
    _one_line_error(capsys, rc, "target.pt", "missing target checkpoint")


@pytest.mark.parametrize("damage", ["garbage", "truncate", "version", "shape", "other_target"])
def test_corrupt_checkpoints(tiny_dir, tmp_path, capsys, damage):
    d = tmp_path / "ck"
    shutil.copytree(tiny_dir[0], d)
    victim = d / ("dspark1.pt" if damage == "other_target" else "target.pt")
    if damage == "garbage":
        victim.write_bytes(b"not a torch file at all")
    elif damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:200])
    else:
        doc = torch.load(victim, weights_only=True)
        if damage == "version":
            doc["version"] = 99
        elif damage == "shape":
            doc["weights"]["head"] = doc["weights"]["head"][:, :10]
        else:
            doc["target_digest"] = "0" * 16
        torch.save(doc, victim)
    rc = specbed(
        [
            "engine",
            "curves",
            "--checkpoints",
            str(d),
            "--out",
            str(tmp_path / "c.json"),
            "--map",
            "dspark=dspark1",
        ]
    )
    _one_line_error(capsys, rc, victim.name)
    assert not (tmp_path / "c.json").exists()


def test_curves_file_of_incompatible_version(tiny_dir, tmp_path, capsys):
    bad = tmp_path / "curves.json"
    bad.write_text(json.dumps({"version": 2, "curves": {}}))
    rc = specbed(
        [
            "fidelity",
            "--checkpoints",
            str(tiny_dir[0]),
            "--drafter",
            "dspark1",
            "--curves",
            str(bad),
            "--cost",
            str(tmp_path / "x.csv"),
            "--draft-seconds",
            "0.001",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    _one_line_error(capsys, rc)  # the cost file is read first: missing
    (tmp_path / "x.csv").write_text("tokens,seconds\n1,0.001\n8,0.002\n")
    rc = specbed(
        [
            "fidelity",
            "--checkpoints",
            str(tiny_dir[0]),
            "--drafter",
            "dspark1",
            "--curves",
            str(bad),
            "--cost",
            str(tmp_path / "x.csv"),
            "--draft-seconds",
            "0.001",
            "--prompt-len",
            "8",
            "--output-len",
            "10",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    _one_line_error(capsys, rc, "curves.json", "version")


@pytest.mark.parametrize(
    "row, what", [("8,abc", "seconds"), ("0,0.1", "tokens"), ("8", "columns"), ("4,-1", "seconds")]
)
def test_cost_csv_with_bad_rows(tiny_dir, tmp_path, capsys, row, what):
    bad = tmp_path / "cost.csv"
    bad.write_text(f"tokens,seconds\n2,0.001\n{row}\n")
    rc = specbed(
        [
            "fidelity",
            "--checkpoints",
            str(tiny_dir[0]),
            "--drafter",
            "dspark1",
            "--cost",
            str(bad),
            "--draft-seconds",
            "0.001",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    _one_line_error(capsys, rc, "cost.csv", what)


def test_bad_options(tiny_dir, tmp_path, capsys):
    rc = specbed(
        [
            "engine",
            "profile",
            "--checkpoints",
            str(tiny_dir[0]),
            "--out",
            str(tmp_path / "c.csv"),
            "--requests",
            "two",
        ]
    )
    _one_line_error(capsys, rc, "--requests")
    rc = specbed(["engine", "eval", "--checkpoints", str(tiny_dir[0]), "--drafters", "medusa3"])
    _one_line_error(capsys, rc, "medusa3.pt")
    rc = specbed(["engine", "bogus"])
    assert rc == 2
