"""The packages' import rules, checked in fresh interpreters (module docstrings state them)."""

import subprocess
import sys
from pathlib import Path

import pytest

RULES = [
    ("specsched", ["torch", "simpy", "sim", "engine", "traces", "matplotlib"]),
    ("specsched.contracts", ["torch", "simpy", "sim", "engine", "traces", "matplotlib"]),
    ("traces", ["torch", "simpy", "sim", "engine"]),
    ("sim", ["torch", "engine", "matplotlib"]),
    ("engine", ["sim", "simpy"]),
    ("engine.lm", ["sim", "simpy", "engine.measure", "engine.proof"]),
]


@pytest.mark.parametrize("package, forbidden", RULES, ids=[r[0] for r in RULES])
def test_import_rules(package, forbidden):
    code = (
        f"import sys, importlib, pkgutil, {package}\n"
        f"for m in pkgutil.walk_packages({package}.__path__, '{package}.'):\n"
        "    if not m.name.endswith(('.cli', '__main__')):\n"
        "        importlib.import_module(m.name)\n"
        f"print(' '.join(sorted(n for n in {forbidden!r} if n in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{package} pulls in: {out.stdout.strip()}"


SERVING_PATH = [
    "engine.model",
    "engine.sampling",
    "engine.noise",
    "engine.verify",
    "engine.drafter",
    "engine.loop",
]


def test_the_engine_serving_path_does_not_import_its_proof():
    code = f"import sys\nfor m in {SERVING_PATH!r}: __import__(m)\nprint('engine.proof' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


ROOT = Path(__file__).resolve().parents[1]
# Markers of the files between the engine and the simulator: only the contract floor may spell them.
CONTRACT_MARKERS = ("draft_seconds_by_R", "join_seconds_by_R", '"prose": "chat"', '"chat": "prose"')


def test_only_the_contract_floor_knows_the_file_formats():
    floor = ROOT / "specsched" / "contracts"
    offenders = [
        f"{path.relative_to(ROOT)}: {marker}"
        for pkg in ("specsched", "sim", "engine", "specbed", "analysis", "paper_figs", "traces")
        for path in (ROOT / pkg).rglob("*.py")
        if floor not in path.parents
        for marker in CONTRACT_MARKERS
        if marker in path.read_text()
    ]
    assert offenders == [], "contract formats spelled outside specsched/contracts: " + "; ".join(offenders)
