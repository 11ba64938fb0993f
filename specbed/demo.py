"""`specbed demo` (what `make demo` runs): the most useful thing specbed does on built-in defaults.

Today: the shared scheduler's decisions on built-in scenarios (`specbed plan`). Later issues grow it into
a policy sweep with Pareto frontiers.
"""

from __future__ import annotations

from specbed import plan_cli


def main(argv: list[str]) -> int:
    print("specbed demo — how each verify-length policy sizes one engine step\n")
    print(plan_cli.render(seed=0))
    return 0
