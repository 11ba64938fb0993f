"""Sweep execution: serial = pool = Ray rows; kill -9 mid-sweep + --resume loses and duplicates nothing;
a pool worker that dies is retried; a failing cell is recorded and retried on --resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis import run_sweep, store
from analysis.sweepfile import expand, load_sweep, parse_sweep
from tests.analysis.conftest import REPO, SWEEP, specbed
from tests.analysis.fake_model import MODEL

FAKE = "tests.analysis.fake_model:MODEL"


def _rows(out: Path) -> list[dict]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("wall_s")
    return rows


def test_serial_and_pool_give_the_same_rows(sweep_file, tmp_path):
    sweep = load_sweep(sweep_file)
    a = run_sweep(sweep, tmp_path / "a", model=MODEL, jobs=1, progress=False)
    b = run_sweep(sweep, tmp_path / "b", model=MODEL, jobs=2, progress=False)
    assert a.total == b.total == 24 and a.ran == b.ran == 24 and not a.failed
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")
    keys = [r["key"] for r in _rows(tmp_path / "a")]
    assert len(set(keys)) == 24 and keys == [c.key for c in expand(sweep, MODEL)]
    csv_lines = (tmp_path / "a" / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 25 and csv_lines[0].startswith("key,series,facet,point")


def test_kill_9_mid_sweep_then_resume_loses_and_duplicates_nothing(sweep_file, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECBED_FAKE_SLEEP": "0.15"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "specbed",
            "sweep",
            str(sweep_file),
            "--out",
            str(out),
            "--jobs",
            "2",
            "--model",
            FAKE,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while len(store.finished_keys(out)) < 5 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its pool workers, mid-flight
    proc.wait()
    done_before = store.finished_keys(out)
    assert 5 <= len(done_before) < 24, "the kill must land mid-sweep"
    assert not (out / "results.jsonl").exists()
    # Without --resume the folder is refused, untouched.
    refused = specbed("sweep", str(sweep_file), "--out", str(out), "--model", FAKE)
    assert refused.returncode == 2 and "--resume" in refused.stderr and len(refused.stderr.splitlines()) == 1
    again = specbed(
        "sweep", str(sweep_file), "--out", str(out), "--jobs", "2", "--resume", "--model", FAKE, "--quiet"
    )
    assert again.returncode == 0, again.stderr
    assert f"{len(done_before)} reused, {24 - len(done_before)} run" in again.stdout
    rows = _rows(out)
    reference = run_sweep(load_sweep(sweep_file), tmp_path / "ref", model=MODEL, jobs=1, progress=False)
    assert [r["key"] for r in rows] == [r["key"] for r in reference.rows]
    assert rows == _rows(tmp_path / "ref")
    assert not list(out.glob(".tmp-*")) and not list((out / "cells").glob(".tmp-*"))


def test_dead_pool_worker_is_retried(sweep_file, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBED_FAKE_CRASH_DIR", str(tmp_path))
    run = run_sweep(load_sweep(sweep_file), tmp_path / "out", model=MODEL, jobs=2, progress=False)
    assert len(list(tmp_path.glob("[0-9a-f]" * 16))) == 6  # six cells (concurrency 16) killed their worker
    assert run.ran == 24 and not run.failed and len(run.rows) == 24


def test_failing_cell_is_recorded_then_retried_on_resume(tmp_path):
    text = SWEEP.replace("seed = [0, 1]", 'seed = [0]\n"workload.think_s" = [0.0, 99.0]')
    sweep = parse_sweep(text, str(tmp_path / "s.toml"))
    out = tmp_path / "out"
    run = run_sweep(sweep, out, model=MODEL, jobs=1, progress=False)
    assert len(run.failed) == 12 and len(run.rows) == 12
    assert "always fails" in run.failed[0][1] and len(list((out / "errors").glob("*.txt"))) == 12
    again = run_sweep(sweep, out, model=MODEL, jobs=1, progress=False, resume=True)
    assert again.cached == 12 and again.ran == 0 and len(again.failed) == 12


def test_cli_sweep_prints_gains_and_exit_1_on_failures(sweep_file, tmp_path):
    res = specbed("sweep", str(sweep_file), "--out", str(tmp_path / "o"), "--jobs", "1", "--model", FAKE)
    assert res.returncode == 0, res.stderr
    assert "24 cells: 0 reused, 24 run, 0 failed" in res.stdout and "iso-SLO gain" in res.stdout
    assert "sweep small [" in res.stderr  # the progress bar


def test_ray_backend_gives_the_same_rows_as_local(sweep_file, tmp_path):
    pytest.importorskip("ray")
    sweep = load_sweep(sweep_file)
    local = run_sweep(sweep, tmp_path / "local", model=MODEL, jobs=2, progress=False)
    ray_run = run_sweep(sweep, tmp_path / "ray", model=MODEL, jobs=2, backend="ray", progress=False)
    assert local.ran == ray_run.ran == 24 and not ray_run.failed
    assert _rows(tmp_path / "local") == _rows(tmp_path / "ray")
