"""vLLM's file formats (top-level `bridge`): read what vLLM users measure, write what they compare against.

- `bridge.acceptance`: acceptance from whatever users paste (format detected by content) to per-position
  rates, through one reader per format: `read_prom` (/metrics, pasted Prometheus/Grafana tables),
  `read_logs` (v1 `SpecDecoding metrics`), `read_json` (bench `--save-result`, per-request
  `acceptance_histogram`), `read_reports` (bench console report, spec_decode.py printout), `read_legacy`
  (τ-only: v0 `Speculative metrics`, SGLang `accept len`); `textutil` holds the shared text handling.
  Formats, versions, exact vs estimated: docs/vllm-formats.md.
- `bridge.bench`: a simulator run in the shape of a `vllm bench serve` result, and the side-by-side
  comparison with a real one.
- `bridge.cli`: `specbed vllm curves`, `specbed vllm export`, `specbed vllm compare`.

May import: numpy, the standard library, `specsched` (errors, inputs, contracts, safeio). Never `sim`,
`engine`, torch or simpy: vLLM's file formats need nothing of the simulator (tests/test_layering.py).
"""
