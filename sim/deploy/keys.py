"""The `[server]` keys of a deployment from vLLM's own knobs (a base of `sim.config.ServerConfig`).

Role: declare and check model, gpu, precision, gpu_memory_utilization, max_model_len, cpu_offload_gb,
prefix_caching and async_scheduling (`sim.vllm_deploy`, docs/validation.md). With `model` set (a catalogue
name or Hugging Face id) the step cost comes from the catalogue with the GPU's shipped knobs
(`server.cost` is unused), KV is sized as vLLM sizes it from gpu_memory_utilization — `server.kv_tokens`
(None by default) then only overrides — automatic prefix caching and async scheduling are on as in vLLM
v1, and `server.replicas` is vLLM's data parallelism. Without `model`, `server.kv_tokens` defaults to
2,000,000 and none of these keys changes a run.

May import: the standard library, `sim.bounds`, `specsched.catalog`, `specsched.draft_shape`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.bounds import check_choice, check_range
from specsched.errors import InputError
from specsched.price import (
    GPU_MEMORY_UTILIZATION,
    PRECISIONS,
    check_utilization,
    get_gpu,
    get_model,
    precision_bytes,
)

#: `drafter.engine`: the serving engines whose speculative step is priced (`specsched.spec_engine.ENGINES`)
SPEC_ENGINES = ("vllm", "sglang")


def check_preset(section: str, preset: str | None, engine: str = "vllm") -> None:
    """`drafter.model`: None or a `specsched.draft_shape` preset; `drafter.engine`: one of SPEC_ENGINES
    (one-line InputError naming the key)."""
    from specsched.price.draft_shape import PRESETS

    if preset is not None and (not isinstance(preset, str) or preset.lower() not in PRESETS):
        choices = ", ".join(PRESETS)
        raise InputError(f"must be a drafter preset ({choices}); got {preset!r}", field=f"{section}.model")
    if engine not in SPEC_ENGINES:
        msg = f"must be one of {', '.join(SPEC_ENGINES)}; got {engine!r}"
        raise InputError(msg, field=f"{section}.engine")


#: server.kv_tokens when neither it nor server.model is given
DEFAULT_KV_TOKENS = 2_000_000


@dataclass(frozen=True)
class VllmServerKeys:
    """model: catalogue name or HF id (None: not a vLLM deployment); gpu: catalogue GPU (None: H100,
    and a config without `model` names no GPU here: `analysis.search.prices` reads it); precision:
    fp16/bf16/fp8 (None: the checkpoint's); gpu_memory_utilization in (0, 1]; max_model_len: longest
    request (None: unchecked); cpu_offload_gb: weights per GPU moved to host memory; prefix_caching,
    async_scheduling: vLLM v1's defaults (on)."""

    model: str | None = None
    gpu: str | None = None  # None: h100 for a vLLM deployment
    precision: str | None = None
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION
    max_model_len: int | None = None
    cpu_offload_gb: float = 0.0
    prefix_caching: bool = True
    async_scheduling: bool = True

    def _check_vllm(self) -> None:
        s = "server"
        check_utilization(self.gpu_memory_utilization, f"{s}.gpu_memory_utilization")
        check_range(s, "cpu_offload_gb", self.cpu_offload_gb, 0.0)
        if self.max_model_len is not None:
            check_range(s, "max_model_len", self.max_model_len, 1)
        if self.gpu is not None:
            get_gpu(self.gpu, field=f"{s}.gpu")
        if self.precision is not None:
            check_choice(s, "precision", self.precision.lower(), tuple(PRECISIONS))
        if self.model is not None:
            precision_bytes(self.precision, get_model(self.model, field=f"{s}.model"), field=f"{s}.precision")
        kv = getattr(self, "kv_tokens", None)
        if kv is None and self.model is None:
            object.__setattr__(self, "kv_tokens", DEFAULT_KV_TOKENS)
        elif kv is not None:
            check_range(s, "kv_tokens", kv, 1)
