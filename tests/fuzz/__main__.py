"""`python -m tests.fuzz`: count the distinct bad inputs of the CLI fuzz catalogue, by category."""

from collections import Counter

from tests.fuzz.cases import all_cases

cases = all_cases()
for category, n in sorted(Counter(c.category for c in cases).items()):
    print(f"{category:<12} {n:4d}")
print(
    f"{'total':<12} {len(cases):4d} catalogued bad inputs (+ hypothesis-generated ones in test_cli_fuzz.py)"
)
