"""Helpers shared by the simulator tests: build a config from --set style overrides, write cost CSVs."""

from __future__ import annotations

from pathlib import Path

from sim import simulate
from sim.config_io import load_config

#: cheap acceptance-model fit for tests that do not look at confidence quality
FAST = ("acceptance.sts_samples=512",)


def config(*sets: str, fast: bool = True):
    return load_config(None, [*(FAST if fast else ()), *sets])


def run(*sets: str, fast: bool = True):
    return simulate(config(*sets, fast=fast))


def flat_cost(tmp_path: Path, seconds: float = 0.01, name: str = "flat.csv") -> str:
    """A one-point table: every step's verify pass takes `seconds`, whatever its size."""
    path = tmp_path / name
    path.write_text(f"tokens,seconds\n1,{seconds!r}\n")
    return str(path)


def saturating_cost(tmp_path: Path, *, flat_s: float = 0.010, knee: int = 256, top: int = 8192) -> str:
    """Memory-bound (flat) up to `knee` tokens, then compute-bound (linear through the origin)."""
    path = tmp_path / "saturating.csv"
    path.write_text(f"tokens,seconds\n1,{flat_s!r}\n{knee},{flat_s!r}\n{top},{flat_s * top / knee!r}\n")
    return str(path)
