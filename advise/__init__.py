"""`specbed advise`: from a vLLM deployment (`vllm serve` flags) and its traffic to a speculative config.

Modules: `advise.inputs` (the flags, the traffic, the measured run), `advise.sweep` (each speculative option
across load through the `[cost]` deployment path), `advise.report` (report.md, plots), `advise.cli`.

May import: the standard library.
"""
