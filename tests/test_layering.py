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
    ("twin", ["matplotlib", "analysis", "paper_figs"]),
    ("bridge", ["torch", "simpy", "sim", "engine", "matplotlib"]),
    ("validate", ["torch", "engine", "matplotlib", "analysis", "paper_figs", "twin"]),
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
#: the packages below the CLI floor, by room
PACKAGES = ("specsched", "sim", "engine", "traces", "twin", "bridge", "validate")
# Markers of the files between the engine and the simulator: only the contract floor may spell them.
CONTRACT_MARKERS = ("draft_seconds_by_R", "join_seconds_by_R", '"prose": "chat"', '"chat": "prose"')


def test_only_the_contract_floor_knows_the_file_formats():
    floor = ROOT / "specsched" / "contracts"
    offenders = [
        f"{path.relative_to(ROOT)}: {marker}"
        for pkg in (*PACKAGES, "specbed", "analysis", "paper_figs")
        for path in (ROOT / pkg).rglob("*.py")
        if floor not in path.parents
        for marker in CONTRACT_MARKERS
        if marker in path.read_text()
    ]
    assert offenders == [], "contract formats spelled outside specsched/contracts: " + "; ".join(offenders)


def _imported_roots(path: Path) -> set[str]:
    """Top-level packages a module imports anywhere (lazy imports inside functions included)."""
    import ast

    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_the_twin_imports_both_the_engine_and_the_simulator():
    """`twin` is the floor above `engine` and `sim`: no other package imports both, so the two stay
    independent (they share only `specsched`), and the fidelity bridge has one home."""
    both = [
        str(path.relative_to(ROOT))
        for pkg in (*(p for p in PACKAGES if p != "twin"), "specbed", "analysis", "paper_figs", "bench")
        for path in (ROOT / pkg).rglob("*.py")
        if {"engine", "sim"} <= _imported_roots(path)
    ]
    assert both == [], "only twin/ may import both engine and sim: " + "; ".join(both)
    assert {"engine", "sim"} <= set().union(*(_imported_roots(p) for p in (ROOT / "twin").glob("*.py")))


@pytest.mark.parametrize(
    "room, forbidden",
    [
        ("bridge", {"sim", "engine", "torch", "simpy", "twin", "validate"}),
        ("validate", {"engine", "torch", "twin"}),
    ],
)
def test_the_rooms_keep_their_imports_in_every_module(room, forbidden):
    """`bridge/` (vLLM's file formats) needs nothing of the simulator; `validate/` (simulator vs measured
    vLLM) nothing of the engine: checked in every module, CLIs and lazy imports included."""
    bad = [
        f"{path.relative_to(ROOT)}: {', '.join(sorted(_imported_roots(path) & forbidden))}"
        for path in sorted((ROOT / room).rglob("*.py"))
        if _imported_roots(path) & forbidden
    ]
    assert bad == [], f"{room}/ imports what its room forbids: " + "; ".join(bad)
