"""`python -m tests.fuzz`: count the distinct bad inputs of the CLI fuzz catalogue, by category."""

from collections import Counter

from tests.fuzz.cases import all_cases

cases = all_cases()
for category, n in sorted(Counter(c.category for c in cases).items()):
    print(f"{category:<12} {n:4d}")
print(
    f"{'total':<12} {len(cases):4d} catalogued bad inputs (+ hypothesis-generated ones in test_cli_fuzz.py)"
)
from tests.fuzz.generate import variants  # noqa: E402 - after the catalogue's count, which needs no CLI

n = len(variants(None))  # folder kinds' field variants need a built template: counted by the sweep itself
print(f"{'generated':<12} {n:4d}+ variants of every command's inputs (python -m tests.fuzz.generate)")
