"""specbed's real engine: batched lossless speculative decoding in torch, with a Triton verifier.

Modules (import what you need; nothing heavy is imported here):
  sampling (the one sampling transform + exponential-race sampling), noise (counter-based keyed noise),
  verify / verify_triton (rejection_sample, accept_prob, residual, match_verify), model (TinyLM + KV cache),
  drafter (Drafter protocol, ModelDrafter), loop (Engine, EngineConfig, Request), step (StepOutput: what
  each step did, handed to the Engine's observers): the serving path, which never imports the proof;
  verify_bench (GPU timing).
Subpackages: engine.proof (the losslessness proof behind `specbed verify`: exact, controls, stats, suite,
suite_engine), engine.lm (trained byte-level target and drafters), engine.measure (τ, curves, profiles).

May import: torch, triton (lazily, engine.verify_triton only), numpy, specsched, stdlib. Never sim/ or simpy.
"""
