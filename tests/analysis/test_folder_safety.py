"""Sweep folders stay whole: one writer at a time (OS lock), broken cell files recomputed on --resume,
bad files named by an axis refused before the folder is touched, an unwritable --out refused up front."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from analysis import run_sweep, store
from analysis.sweepfile import load_sweep
from specbed.cli import main
from tests.analysis.conftest import REPO, SWEEP
from tests.analysis.fake_model import MODEL

FAKE = "tests.analysis.fake_model:MODEL"


def _rows(out):
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


def test_second_writer_is_refused_and_the_folder_holds_one_whole_sweep(sweep_file, tmp_path, capsys):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECBED_FAKE_SLEEP": "0.1"}
    cmd = [sys.executable, "-m", "specbed", "sweep", str(sweep_file), "--out", str(out)]
    first = subprocess.Popen(
        [*cmd, "--jobs", "1", "--model", FAKE, "--quiet"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(store.finished_keys(out)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        other = tmp_path / "other.toml"
        other.write_text(SWEEP.replace("seed = [0, 1]", "seed = [5]"))
        for flags in (["--force"], ["--resume"], []):
            code = main(
                ["sweep", str(sweep_file if flags else other), "--out", str(out), *flags, "--model", FAKE]
            )
            err = capsys.readouterr().err
            assert code == 2 and len(err.splitlines()) == 1 and "another sweep is writing" in err, err
        assert first.wait(timeout=120) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    reference = run_sweep(load_sweep(sweep_file), tmp_path / "ref", model=MODEL, jobs=1, progress=False)
    assert _rows(out) == _rows(tmp_path / "ref") and len(reference.rows) == 24
    assert sorted(p.name for p in (out / "cells").iterdir()) == sorted(
        f"{r['key']}.json" for r in reference.rows
    )


def test_lock_is_released_when_the_holder_dies(tmp_path):
    out = tmp_path / "out"
    code = (
        "import sys, time; from analysis import store\n"
        "with store.locked(sys.argv[1]):\n    print('in', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(out)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "in"
    try:
        with store.locked(out):
            raise AssertionError("the lock must be held by the other process")
    except store.InputError as err:
        assert "another sweep" in str(err)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with store.locked(out):  # kill -9 released it
        pass


def test_broken_cell_files_are_recomputed_on_resume(sweep_file, tmp_path):
    out = tmp_path / "out"
    sweep = load_sweep(sweep_file)
    run_sweep(sweep, out, model=MODEL, jobs=1, progress=False)
    reference = _rows(out)
    cells = sorted((out / "cells").glob("*.json"))
    cells[0].write_bytes(b"")  # 0 bytes (a disk that filled up outside our atomic writes)
    cells[1].write_text(cells[1].read_text()[:20])  # truncated
    cells[2].write_bytes(b"\x00\xff" * 10)  # binary garbage
    cells[3].write_text(json.dumps({"key": "not-this-cell", "summary": {}}))  # another cell's row
    assert len(store.finished_keys(out)) == 20
    again = run_sweep(sweep, out, model=MODEL, jobs=2, progress=False, resume=True)
    assert again.cached == 20 and again.ran == 4 and not again.failed
    assert _rows(out) == reference


def test_bad_file_on_an_axis_is_refused_before_the_folder_exists(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"tokens,seconds\n1,0.01\n\xff\xfe,0.02\n")
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP.replace("seed = [0, 1]", f'"cost.table" = ["h200-v4flash", "{bad}"]'))
    out = tmp_path / "out"
    code = main(["sweep", str(sweep), "--out", str(out), "--model", FAKE])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "bad.csv" in err and "cost.table" in err, err
    assert not out.exists()


def test_unwritable_out_is_refused_before_any_cell_runs(sweep_file, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("keep me\n")
    code = main(["sweep", str(sweep_file), "--out", str(blocker / "sub"), "--model", FAKE])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "--out" in err or "file" in err, err
    assert blocker.read_text() == "keep me\n"


def test_kill_9_at_any_point_then_resume_loses_and_duplicates_no_cell(sweep_file, tmp_path):
    """Kill the sweep at several instants (start-up, manifest, mid-cells, near the end), resume each time."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECBED_FAKE_SLEEP": "0.05"}
    cmd = [sys.executable, "-m", "specbed", "sweep", str(sweep_file), "--out", str(out), "--model", FAKE]
    seen = []
    for after in (0.2, 0.9, 1.3, 1.8):
        flags = ["--resume"] if out.exists() and store.read_manifest(out) is not None else []
        proc = subprocess.Popen(
            [*cmd, "--jobs", "2", "--quiet", *flags],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(after)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        seen.append(len(store.finished_keys(out)) if out.exists() else 0)
    flags = ["--resume"] if out.exists() and store.read_manifest(out) is not None else []
    final = subprocess.run(
        [*cmd, "--jobs", "2", "--quiet", *flags], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert final.returncode == 0, final.stderr
    reference = run_sweep(load_sweep(sweep_file), tmp_path / "ref", model=MODEL, jobs=1, progress=False)
    assert _rows(out) == _rows(tmp_path / "ref")
    assert sorted(p.name for p in (out / "cells").iterdir()) == sorted(
        f"{r['key']}.json" for r in reference.rows
    )
    assert seen == sorted(seen), seen  # finished cells only ever accumulate
