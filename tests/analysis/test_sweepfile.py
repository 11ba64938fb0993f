"""Sweep files: expansion, stable keys, roles; bad input -> one line, exit 2, nothing touched."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from analysis.model import SimModel
from analysis.sweepfile import config_key, expand, load_sweep, parse_sweep
from specsched.io.errors import InputError
from tests.analysis.conftest import REPO, SWEEP, specbed
from tests.analysis.fake_model import MODEL

FAKE = "tests.analysis.fake_model:MODEL"


def test_expansion_order_roles_and_stable_keys(sweep_file):
    cells = expand(load_sweep(sweep_file), MODEL)
    assert len(cells) == 3 * 4 * 2
    assert [c.series for c in cells[:8]] == ["AR"] * 8 and cells[8].series == "MTP-1"
    assert cells[0].axes == {
        "drafter.name": "none",
        "drafter.gamma": 0,
        "policy.name": "ar",
        "policy.k": "none",
        "workload.concurrency": 4,
        "seed": 0,
    }
    assert cells[1].config["seed"] == 1 and cells[2].point == "concurrency=8"
    assert cells[9].config["policy"] == {
        "name": "fixed",
        "k": 1,
        "threshold": None,
        "delay": None,
        "budget": None,  # declared by specsched/contrib/topk_budget.py (the policy registry)
        "nodes": None,  # specsched/contrib/dspark_tree.py
        "first_stop": None,
        "draft": "full",
        "slack": None,
    }
    assert all(c.facet == "" for c in cells)
    again = expand(load_sweep(sweep_file), MODEL)
    assert [c.key for c in again] == [c.key for c in cells] and len({c.key for c in cells}) == 24
    assert cells[0].key == config_key(cells[0].config)


def test_facets_default_labels_and_merged_duplicates(tmp_path):
    text = """
[axes]
"policy.name" = ["ar", "dspark"]
"cost.table" = ["h200-v4flash", "h200-v4pro"]
"workload.rate" = [1.0, 2.0]
"metrics.warmup" = [0.1, 0.1]
"""
    cells = expand(parse_sweep(text, str(tmp_path / "s.toml")), MODEL)
    assert len(cells) == 8  # the repeated warmup value gives identical configs: run once
    assert {c.series for c in cells} == {"ar", "dspark/dspark"}
    assert {c.facet for c in cells} == {"table=h200-v4flash, warmup=0.1", "table=h200-v4pro, warmup=0.1"}
    assert {c.point for c in cells} == {"rate=1.0", "rate=2.0"}


def test_base_file_and_set(tmp_path):
    (tmp_path / "base.toml").write_text("seed = 3\n[workload]\nrate = 2.5\n")
    text = 'base = "base.toml"\nset = ["workload.num_requests=77", "policy.name=ar"]\n[axes]\nseed = [3]\n'
    (cell,) = expand(parse_sweep(text, str(tmp_path / "s.toml")), MODEL)
    assert cell.config["workload"]["rate"] == 2.5 and cell.config["workload"]["num_requests"] == 77
    assert cell.config["policy"]["name"] == "ar"


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            ('"workload.concurrency" = [4, 8, 16, 32]', '"workload.concurency" = [4, 8]'),
            ["workload.concurency", "unknown config key"],
        ),
        (
            ('"workload.concurrency" = [4, 8, 16, 32]', '"workload.concurrency" = []'),
            ["workload.concurrency", "empty axis"],
        ),
        (
            ('"workload.concurrency" = [4, 8, 16, 32]', '"workload.concurrency" = [4, "lots"]'),
            ["workload.concurrency", "expected int"],
        ),
        (
            ('"workload.concurrency" = [4, 8, 16, 32]', '"workload.concurrency" = [4, -8]'),
            ["workload.concurrency", "≥ 1"],
        ),
        (('name = "small"', 'name = "small"\nrepeat = 3'), ["repeat", "unknown sweep key"]),
        (('baseline = "MTP-1"', 'baseline = "MTP-1"\nsloo = [1]'), ["sloo", "unknown analysis key"]),
        (('"policy.k" = ["none", 1, "none"]', '"policy.k" = ["none", 1]'), ["differ in length"]),
        (('kind = "closed"', 'kind = "closed"\nspeed = 3'), ["workload.speed", "unknown config key"]),
        (("seed = [0, 1]", "seed = [0, 1"), ["not valid TOML"]),
        (('"drafter.gamma" = [0, 1, 7]', '"drafter.gamma" = [0, 1.5, 7]'), ["drafter.gamma", "expected int"]),
        (("[base]", 'set = ["cost.table=h300-nope"]\n[base]'), ["cost.table", "unknown cost table"]),
    ],
)
def test_bad_sweep_file_one_line_exit_2_nothing_touched(tmp_path, edit, words):
    old, new = edit
    assert old in SWEEP
    bad = tmp_path / "bad.toml"
    bad.write_text(SWEEP.replace(old, new))
    with pytest.raises(InputError) as info:
        expand(load_sweep(bad), MODEL)
    for word in words:
        assert word in str(info.value)
    out = tmp_path / "out"
    res = specbed("sweep", str(bad), "--out", str(out), "--model", FAKE)
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert str(bad) in res.stderr or "not valid TOML" in res.stderr
    assert not out.exists()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_folder_holding_another_sweep_or_other_files_is_refused_untouched(sweep_file, tmp_path):
    out = tmp_path / "out"
    assert specbed("sweep", str(sweep_file), "--out", str(out), "--model", FAKE, "--quiet").returncode == 0
    before = _snapshot(out)
    other = tmp_path / "other.toml"
    other.write_text(SWEEP.replace("[4, 8, 16, 32]", "[4, 8, 64]"))
    res = specbed("sweep", str(other), "--out", str(out), "--model", FAKE, "--resume")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert str(out) in res.stderr and "different sweep" in res.stderr
    assert _snapshot(out) == before
    # A folder with unrelated files is never used, even with --force.
    stuff = tmp_path / "stuff"
    stuff.mkdir()
    (stuff / "notes.txt").write_text("mine\n")
    res = specbed("sweep", str(sweep_file), "--out", str(stuff), "--model", FAKE, "--force")
    assert res.returncode == 2 and "holds no sweep" in res.stderr
    assert _snapshot(stuff) == {"notes.txt": b"mine\n"}
    # --force replaces a sweep (and only the sweep's own files).
    (out / "mine.txt").write_text("keep\n")
    res = specbed("sweep", str(other), "--out", str(out), "--model", FAKE, "--force", "--quiet")
    assert res.returncode == 0 and (out / "mine.txt").read_text() == "keep\n"
    assert len((out / "results.jsonl").read_text().splitlines()) == 18


def test_bad_flags_one_line_exit_2(sweep_file, tmp_path):
    for args in (
        ["--jobs", "0"],
        ["--backend", "slurm"],
        ["--address", "x:1"],
        ["--model", "nope:X"],
        ["--resume", "--force"],
        ["--bogus"],
    ):
        res = specbed("sweep", str(sweep_file), "--out", str(tmp_path / "o"), *args)
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, (args, res.stderr)
        assert not (tmp_path / "o").exists()
    res = specbed("pareto", str(tmp_path / "nothing"))
    assert res.returncode == 2 and "no sweep" in res.stderr


def test_ray_missing_is_one_line(sweep_file, tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ray(name, *args, **kw):
        if name == "ray":
            raise ImportError("no ray here")
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    from analysis import run_sweep

    with pytest.raises(InputError, match=r"needs the optional dependency ray"):
        run_sweep(load_sweep(sweep_file), tmp_path / "o", model=MODEL, backend="ray", progress=False)
    assert not (tmp_path / "o").exists()


def test_example_sweeps_parse_and_expand():
    files = sorted((REPO / "sweeps").glob("*.toml"))
    assert files
    for path in files:
        tomllib.loads(path.read_text())
        cells = expand(load_sweep(path), SimModel())
        assert cells, path


def test_unreachable_ray_address_is_one_line_fast(sweep_file, tmp_path):
    pytest.importorskip("ray")
    res = specbed(
        "sweep",
        str(sweep_file),
        "--out",
        str(tmp_path / "o"),
        "--backend",
        "ray",
        "--address",
        "127.0.0.1:1",
        "--model",
        FAKE,
    )
    assert res.returncode == 2 and "cannot reach Ray at 127.0.0.1:1" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
