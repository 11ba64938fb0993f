"""The search's long-lived worker pool: a run whose worker dies is handed on and retried, not lost, and the
runs finished beside it are all reported (analysis.search.workers, analysis.runner.settle)."""

from __future__ import annotations

from analysis.search.workers import Workers
from analysis.sweepfile import expand, load_sweep
from tests.analysis.fake_model import MODEL


def test_a_killed_worker_loses_no_run(sweep_file, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBED_FAKE_CRASH_DIR", str(tmp_path))  # the first run at concurrency 16 dies
    cells = expand(load_sweep(sweep_file), MODEL)
    assert any(c.config["workload"]["concurrency"] == 16 for c in cells)
    done: list[str] = []
    failed: list[str] = []
    with Workers(MODEL, 2, "local") as workers:
        workers.run(
            cells, lambda c, s, w: done.append(c.key), lambda c, e: failed.append(c.key), lambda: False
        )
    assert not failed
    assert sorted(done) == sorted(c.key for c in cells)  # every run once: the killed ones retried
    assert len(done) == len(set(done))
    assert any(tmp_path.iterdir()), "a worker must have died"
