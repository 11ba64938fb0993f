"""Per-GPU kernel efficiencies from measured vLLM kernels, and the GPU rule built on them.

Role: `forms` (the physical form of each kernel kind and its fit), `tables` (reads the measured kernel
tables; refit only), `figures` (the shipped per-GPU figures, the rule that carries calibrated knobs to a
GPU without measured runs, FP8 and the per-token prefill term).

May import: numpy, the standard library, `specsched.io.errors`, `specsched.io.inputs`,
`specsched.price.models`.
"""

from specsched.kernels.figures import (
    allreduce_seconds,
    carry_dataclass,
    carry_knobs,
    fp8_knobs,
    fp8_quant_seconds,
    fp8_rate,
    fp8_terms,
    kernel_caps,
    kv_bytes_factor,
    prefill_parts,
    prefill_seconds,
)

__all__ = [
    "allreduce_seconds",
    "carry_dataclass",
    "carry_knobs",
    "fp8_knobs",
    "fp8_quant_seconds",
    "fp8_rate",
    "fp8_terms",
    "kernel_caps",
    "kv_bytes_factor",
    "prefill_parts",
    "prefill_seconds",
]
