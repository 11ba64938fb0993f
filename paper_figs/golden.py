"""Golden tiny-mode summaries: run every figure with --tiny and compare with (or rewrite) paper_figs/golden/.

    python -m paper_figs.golden            # compare; exit 1 listing the differences
    python -m paper_figs.golden --update   # rewrite paper_figs/golden/<figure>.json

Tolerances (`TOLERANCE`): runs are deterministic functions of their seeds, so on one machine the summaries
repeat exactly; the tolerance absorbs floating-point differences across numpy/BLAS builds and platforms
(a last-bit change can flip one Bernoulli draw and move a Monte Carlo figure slightly): relative 2 % on
every number, absolute 0.02 (for values near zero such as gaps and gains). A simulator change that moves a
figure by more fails the check; regenerate with --update and explain the change in REPRODUCTION.md.

May import: the standard library, `paper_figs`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path

from paper_figs.common import compare
from specsched.io import safeio
from specsched.io.results import dumps_json

FIGURES = ("fig2_acceptance", "table1_tau", "fig7_pareto", "fig8_budget", "crossover", "vllm_adaptive")
GOLDEN = Path(__file__).parent / "golden"
TOLERANCE = {"rel": 0.02, "abs_": 0.02}


def run_tiny(name: str, out: Path, jobs: int = 1) -> dict:
    module = importlib.import_module(f"paper_figs.{name}")
    module.main(["--tiny", "--out", str(out), "--jobs", str(jobs), "--quiet"])
    return json.loads((out / "summary.json").read_text())


def check(name: str, out: Path, jobs: int = 1) -> list[str]:
    actual = run_tiny(name, out, jobs)
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    return compare(actual, golden, **TOLERANCE)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="paper_figs.golden")
    p.add_argument("--update", action="store_true")
    p.add_argument("names", nargs="*", default=list(FIGURES))
    args = p.parse_args(argv)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names:
            out = Path(tmp) / name
            if args.update:
                GOLDEN.mkdir(exist_ok=True)
                summary = run_tiny(name, out, jobs=1)
                safeio.write_text(GOLDEN / f"{name}.json", dumps_json(summary, indent=1))
                print(f"updated {GOLDEN / (name + '.json')}")
                continue
            problems = check(name, out)
            bad += bool(problems)
            print(f"{name}: {'ok' if not problems else f'{len(problems)} differences'}")
            for line in problems[:20]:
                print("   ", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
