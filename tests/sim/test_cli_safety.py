"""`specbed run --out`: checked before simulating; kill -9 mid-run or a full disk never touches the
previous results."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from specbed.cli import main

REPO = Path(__file__).resolve().parents[2]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_bad_out_is_refused_before_the_simulation(tmp_path, capsys, monkeypatch):
    import sim.run

    def boom(*a, **k):  # the run must never start
        raise AssertionError("simulated before checking --out")

    monkeypatch.setattr(sim.run, "simulate", boom)
    (tmp_path / "afile").write_text("x")
    assert main(["run", "--quiet", "--out", str(tmp_path / "afile" / "sub")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "afile" in err[0] and "--out" in err[0], err


def test_kill_9_mid_run_leaves_the_previous_results(tmp_path):
    out = tmp_path / "out"
    argv = ["run", "--quiet", "--set", "workload.num_requests=30", "--out", str(out)]
    assert main(argv) == 0
    before = _files(out)
    slow = [
        sys.executable,
        "-m",
        "specbed",
        *argv[:-4],
        "--set",
        "workload.num_requests=200000",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(
        slow, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True
    )
    time.sleep(3.0)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _files(out) == before  # every file whole and unchanged; no temporary left behind
