"""The packages' import rules, checked in fresh interpreters (module docstrings state them)."""

import subprocess
import sys

import pytest

RULES = [
    ("specsched", ["torch", "simpy", "sim", "engine", "traces", "matplotlib"]),
    ("traces", ["torch", "simpy", "sim", "engine"]),
    ("sim", ["torch", "engine", "matplotlib"]),
    ("engine", ["sim", "simpy"]),
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
