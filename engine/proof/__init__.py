"""The engine's losslessness proof, apart from the serving path it checks.

Modules: exact (exact enumeration of the emitted law of one speculative step, with `Fraction`s), controls
(negative controls: biased verifiers the suite must catch), stats (χ² tests of the real verifier and
loop), suite (the seeded run behind `specbed verify`: exact, controls, χ²), suite_engine (its engine half:
parity, coupled-mode and batch invariance of the real decode loop, bad-row errors; shared input
generators) and table (the rows `specbed verify` prints). The serving path (model, sampling, noise,
verify, Triton kernel, drafter, loop) lives in `engine/` and never imports this package.

May import: torch, numpy, stdlib, specsched, engine.* (the serving path).
"""
