"""specbed's real engine: batched lossless speculative decoding in torch, with a Triton verifier.

Modules (import what you need; nothing heavy is imported here):
  sampling (the one sampling transform + exponential-race sampling), noise (counter-based keyed noise),
  verify / verify_triton (rejection_sample, accept_prob, residual, match_verify), model (TinyLM + KV cache),
  drafter (Drafter protocol, ModelDrafter), loop (Engine, EngineConfig, Request), exact / controls / stats /
  suite / suite_engine (the losslessness suite behind `specbed verify`), verify_bench (GPU timing).
Subpackages engine.lm and engine.measure belong to other issues.

May import: torch, triton (lazily, engine.verify_triton only), numpy, specsched, stdlib. Never sim/ or simpy.
"""
