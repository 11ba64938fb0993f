"""The line budget (tinygrad keeps one): every module ≤ 400 lines and every function ≤ 60, printed when over;
the suite fails above 450 and 80. Data is exempt: the modules in `DATA` and the fuzz catalogue's case-table
functions (`tests/fuzz/*`, named `*_cases`: lists of cases, not logic), which are printed but never fail."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "specsched",
    "sim",
    "engine",
    "traces",
    "analysis",
    "specbed",
    "twin",
    "bridge",
    "validate",
    "paper_figs",
    "bench",
    "tests",
)
SOFT_MODULE, HARD_MODULE, SOFT_FUNCTION, HARD_FUNCTION = 400, 450, 60, 80
#: modules that are data (case tables), not logic
DATA = {"tests/fuzz/cases.py"}


def _sources():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in DATA and ".venv" not in path.parts:
                yield rel, path.read_text()


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def sizes():
    """([(module, lines)], [(module:line function, lines)]) over the soft limits, largest first."""
    modules, functions = [], []
    for rel, text in _sources():
        lines = len(text.splitlines())
        if lines > SOFT_MODULE:
            modules.append((rel, lines))
        for name, line, n in _functions(ast.parse(text)):
            if n > SOFT_FUNCTION:
                functions.append((f"{rel}:{line} {name}", n))
    return sorted(modules, key=lambda x: -x[1]), sorted(functions, key=lambda x: -x[1])


def _case_table(where: str) -> bool:
    """Whether `where` ("module:line name") is a fuzz case-table function (data, see the module doc)."""
    module, name = where.split(":")[0], where.rsplit(" ", 1)[-1]
    return module.startswith("tests/fuzz/") and name.endswith("_cases")


def test_line_budget():
    modules, functions = sizes()
    for where, n in modules + functions:
        print(f"over budget: {where}: {n} lines")
    hard = [f"{m}: {n}" for m, n in modules if n > HARD_MODULE]
    hard += [f"{f}: {n}" for f, n in functions if n > HARD_FUNCTION and not _case_table(f)]
    assert not hard, f"over the hard line budget ({HARD_MODULE} a module, {HARD_FUNCTION} a function): {hard}"


if __name__ == "__main__":
    for where, n in sum(sizes(), []):
        print(f"{n:5d}  {where}")
