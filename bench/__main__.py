"""`python -m bench [NAME ...]`: run every bench/bench_*.py module's main(), or only the named ones.

Benchmarks print figures; they never assert on wall time (speed goals are read, not tested).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_")
    )
    wanted = [a if a.startswith("bench_") else f"bench_{a}" for a in argv]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        print(f"bench: error: unknown benchmark {unknown[0]!r} (have: {', '.join(names)})", file=sys.stderr)
        return 2
    for name in wanted or names:
        module = importlib.import_module(f"bench.{name}")
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        module.main()
        print(f"--- {name}: {time.perf_counter() - start:.1f} s wall", flush=True)
    return 0


raise SystemExit(main(sys.argv[1:]))
