"""Bridge to vLLM: read what vLLM users measure, write what they compare against.

- `sim.vllm.acceptance`: acceptance counters from vLLM's Prometheus `/metrics`, its `SpecDecoding metrics`
  log lines and `vllm bench serve --save-result` JSON, to per-position rates.
- `sim.vllm.bench`: a simulator run in the shape of a `vllm bench serve` result, and the side-by-side
  comparison with a real one.
- `sim.vllm.cli`: `specbed curves from-vllm`, `specbed export`, `specbed compare`.

May import: numpy, the standard library, `sim` modules, `specsched` (errors, contracts).
"""
