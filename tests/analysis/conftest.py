"""Fixtures for the analysis tests: small sweep files run by the fake cell model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SWEEP = """\
name = "small"

[base]
seed = 0

[base.workload]
kind = "closed"
num_requests = 50

[[zip]]
label = ["AR", "MTP-1", "DSpark"]
"drafter.name" = ["none", "mtp", "dspark"]
"drafter.gamma" = [0, 1, 7]
"policy.name" = ["ar", "fixed", "dspark"]
"policy.k" = ["none", 1, "none"]

[axes]
"workload.concurrency" = [4, 8, 16, 32]
seed = [0, 1]

[analysis]
baseline = "MTP-1"
slo = [150]
"""


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SWEEP)
    return path


def specbed(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """Run `python -m specbed ARGS` from the repo root (so tests.analysis.fake_model imports)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "specbed", *args],
        cwd=REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )
