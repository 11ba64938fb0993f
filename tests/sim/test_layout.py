"""Package hygiene: the simulator never imports torch, its modules state their imports, configs load."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from sim.config import SimConfig
from sim.config_io import load_config

ROOT = Path(__file__).resolve().parents[2]
OWN = [
    "sim.config",
    "sim.bounds",
    "sim.deployment",
    "sim.config_io",
    "sim.workload",
    "sim.drafter",
    "sim.recorder",
    "sim.server",
    "sim.drafting",
    "sim.steps",
    "sim.metrics",
    "sim.run",
    "sim.cli",
    "sim.routing",
    "sim.wiring",
    "sim.shard",
    "sim.raysession",
    "sim.stepcost",
    "sim.timebins",
    "sim.model",
    "sim.config_doc",
    "sim.disagg",
    "sim.disagg.cli",
    "sim.disagg.config",
    "sim.disagg.prefix",
    "sim.disagg.run",
]


def test_simulator_does_not_import_torch():
    code = "import sys, sim.cli, sim.run; sim.run.simulate; assert 'torch' not in sys.modules, 'torch'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("name", OWN)
def test_module_docstring_states_role_and_imports(name):
    module = importlib.import_module(name)
    assert module.__doc__ and "May import" in module.__doc__
    assert len(Path(module.__file__).read_text().splitlines()) <= 420


def test_default_config_file_is_the_default():
    assert load_config(ROOT / "configs" / "default.toml") == SimConfig()


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.toml")), ids=lambda p: p.name)
def test_example_configs_load(path):
    from sim.disagg import is_disaggregated, load_disagg

    load_disagg(path) if is_disaggregated(path) else load_config(path)
