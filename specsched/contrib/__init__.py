"""Policies added in one file each: every module here is imported when `specsched.policies` is, and
registers its policy (`specsched.registry.register` or the `policy` decorator). docs/policies.md says how;
`topk_budget.py` is the worked example.

May import: numpy, the standard library, specsched.registry, specsched.policies' building blocks.
"""
