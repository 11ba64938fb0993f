"""Shared timing helper for the benchmarks (figures only: nothing here asserts on time)."""

from __future__ import annotations

import time


def per_call_us(fn, min_seconds: float = 0.2) -> float:
    """Microseconds per call of `fn()`: one warm-up call, then repeat until `min_seconds` and ≥ 5 calls."""
    fn()
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and n >= 5:
            return elapsed / n * 1e6
