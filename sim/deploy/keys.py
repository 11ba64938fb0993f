"""The `[cost]` section: how a config names the price of its steps — a table, or a deployment.

Role: declare and check every key that prices a step (a base of `sim.config.ServerConfig`, where the values
live in code: `cfg.server.cost`, `cfg.server.model`, ...), and the vocabulary a config file and `--set`
use for them (`COST_KEYS`: the `[cost]` name of each field; `sim.config_io` reads and writes it). A
`[cost]` section holds ONE of two kinds, plus keys both kinds take:

- a table (`TABLE_KEYS`): `table` — a built-in cost table name (`specsched.BUILTIN_COSTS`), a
  `tokens,seconds` CSV or a fit file (`specbed cost fit`'s FIT.json, priced for `server.tp` and `ep`) —
  read with its `mode`, `layers`, expert parallelism `ep` and CUDA graphs (`max_cudagraph_capture_size`,
  `cudagraph_capture_sizes`, `eager_factor`);
- a deployment (`DEPLOYMENT_KEYS`): a catalogue `model` (name or Hugging Face id) with `precision`,
  `gpu_memory_utilization`, `max_model_len`, `cpu_offload_gb`, `prefix_caching`, `async_scheduling`
  (vLLM's own knobs, `specsched.price.vllm`): the catalogue step with the GPU's shipped (calibrated)
  knobs, KV sized as vLLM sizes it (`server.kv_tokens` then only overrides), automatic prefix caching and
  async scheduling on as in vLLM v1, `server.replicas` vLLM's data parallelism, `server.tp` its tensor
  parallelism;
- either (`SHARED_KEYS`): `gpu` (the deployment's GPU; for a table, the GPU kind `specbed search` prices
  it at), `policy_table` and the engine corrections (`prefill_request_seconds`, `pad_token_seconds`,
  `padded_context_seconds`).

A key of the other kind is a one-line error naming it (it would be ignored). The old spelling — these keys
in `[server]` (`server.cost`, `server.model`, ...) — still reads, with a `warning:` line naming the new key.

May import: the standard library, `sim.bounds`, `specsched` (errors, graphs, price, draft_shape, draft_lm).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from sim.bounds import check_choice, check_range
from specsched.graphs import check_capture_sizes
from specsched.io.errors import InputError
from specsched.price import (
    GPU_MEMORY_UTILIZATION,
    PRECISIONS,
    check_utilization,
    get_gpu,
    get_model,
    precision_bytes,
)
from specsched.price.vllm import KV_CACHE_DTYPES

#: `[cost]` name -> `ServerConfig` field, by kind (module docstring)
TABLE_KEYS = {"table": "cost", "mode": "cost_mode",
              **{k: k for k in ("layers", "ep", "max_cudagraph_capture_size", "cudagraph_capture_sizes",
                                "eager_factor")}}  # fmt: skip
DEPLOYMENT_KEYS = {k: k for k in ("model", "precision", "gpu_memory_utilization", "max_model_len",
                                  "cpu_offload_gb", "prefix_caching", "async_scheduling",
                                  "kv_cache_dtype")}  # fmt: skip
SHARED_KEYS = {"policy_table": "policy_cost",
               **{k: k for k in ("gpu", "prefill_request_seconds", "pad_token_seconds",
                                 "padded_context_seconds")}}  # fmt: skip
COST_KEYS = {**TABLE_KEYS, **DEPLOYMENT_KEYS, **SHARED_KEYS}
#: `ServerConfig` field -> its `[cost]` name
COST_NAME = {f: k for k, f in COST_KEYS.items()}

#: `drafter.engine`: the serving engines whose speculative step is priced (`specsched.price.spec_engine`)
SPEC_ENGINES = ("vllm", "sglang", "vllm-0.8", "vllm-0.9", "vllm-0.10", "vllm-0.11", "vllm-0.12", "vllm-0.15",
                "sglang-0.4", "sglang-0.5", "trtllm")  # fmt: skip
#: server.kv_tokens when neither it nor cost.model is given
DEFAULT_KV_TOKENS = 2_000_000


def check_preset(section: str, preset: str | None, engine: str = "vllm") -> None:
    """`drafter.model`: None or a `specsched.price.draft_shape` preset; `drafter.engine`: one of
    SPEC_ENGINES (one-line InputError naming the key)."""
    from specsched.draft_lm import find_draft_lm  # a draft LM (llama3.2-1b, ...) is a drafter too
    from specsched.price.draft_shape import PRESETS

    if preset is not None and (
        not isinstance(preset, str) or (preset.lower() not in PRESETS and find_draft_lm(preset) is None)
    ):
        choices = ", ".join(PRESETS)
        raise InputError(
            f"must be a drafter preset ({choices}) or a draft model (llama3.2-1b, qwen3-0.6b, a catalogue "
            f"model); got {preset!r}",
            field=f"{section}.model",
        )
    if engine not in SPEC_ENGINES:
        msg = f"must be one of {', '.join(SPEC_ENGINES)}; got {engine!r}"
        raise InputError(msg, field=f"{section}.engine")
    if preset is None and engine != SPEC_ENGINES[0]:  # only a draft model's step is priced by engine
        raise InputError(f"{engine!r} prices a draft model's step, but no {section}.model is set: "
                         "it would be ignored", field=f"{section}.engine")  # fmt: skip


def check_tp_heads(shape, tp: int, field: str = "server.tp") -> None:
    """vLLM's rule for `tp` (QKVParallelLinear): the attention heads split evenly over the GPUs, and the KV
    heads too, or (fewer KV heads than GPUs) each KV head is replicated on tp / kv_heads GPUs, a whole
    number. One-line InputError naming `field` otherwise; models without head counts are not checked."""
    heads, kv = getattr(shape, "heads", None), getattr(shape, "kv_heads", None)
    if heads and heads % tp:
        raise InputError(f"{tp} does not divide {shape.name}'s {heads} attention heads (vLLM refuses it)",
                         field=field)  # fmt: skip
    if kv and (kv % tp if kv >= tp else tp % kv):
        how = "divide" if kv >= tp else "be a multiple of"
        raise InputError(f"{tp} must {how} {shape.name}'s {kv} KV heads (vLLM refuses it)", field=field)


def check_room(kv_tokens: int, max_model_len: int | None, *, sized: bool, where: str) -> None:
    """vLLM's start-up check (`check_enough_kv_cache_memory`): the KV cache must hold one request of
    max_model_len tokens, or vLLM refuses to start ("max_model_len is greater than the maximum number of
    tokens that can be stored in KV cache"). One line naming the keys; None: unchecked (vLLM's default is
    the checkpoint's context, which the catalogue does not hold). sized: kv_tokens is vLLM's sizing (False:
    the config's server.kv_tokens override); where: the deployment, for the message."""
    if max_model_len is None or max_model_len <= kv_tokens:
        return
    what = (
        f"the KV cache of {where} holds {kv_tokens:,} tokens"
        if sized
        else f"server.kv_tokens is {kv_tokens:,}"
    )
    fix = "lower it, or raise cost.gpu_memory_utilization or server.tp" if sized else "lower one of them"
    raise InputError(f"{max_model_len:,} tokens for one request, but {what}: vLLM refuses to start ({fix})",
                     field="cost.max_model_len")  # fmt: skip


@dataclass(frozen=True)
class CostKeys:
    """The `[cost]` section (module docstring; `sim.deploy.cost` prices it).

    table: a built-in cost table name, a `tokens,seconds` CSV path, or a fit file priced for `server.tp`
        and `ep`; it gives one replica's step latency. mode: how a CSV table is read between its points:
        "step" (the next measured size at or above B, as engines pad to captured sizes) or "linear"
        (interpolate); built-in tables ignore it. layers: target layers, to price draft layers (one draft
        layer = latency / layers); default: the built-in table's own; required with a CSV table when the
        drafter has layers to price. ep: expert-parallel degree of a fit file's table (MoE models only);
        None = 1.
    max_cudagraph_capture_size / cudagraph_capture_sizes: model an engine replaying captured CUDA graphs
        (`specsched.graphs`): a step of B tokens pays the smallest captured size ≥ B, and past the largest
        it runs eagerly at `eager_factor` × the cost. Sizes default to vLLM's list up to the maximum (1,
        2, 4, every 8 below 256, every 16 from 256); sizes above the maximum are dropped. Both None = the
        table as it is (a built-in that models graphs keeps its own); else they re-pad any table (built-in,
        CSV, policy_table). eager_factor: ≥ 1, None = the built-in's own, else `graphs.EAGER_FACTOR`.
    model: a catalogue model (name or Hugging Face id): the deployment (None: a table). gpu: catalogue
        GPU (a deployment without one runs on H100s, a table's is the GPU kind a search prices). precision:
        fp16/bf16/fp8 (None: the checkpoint's). gpu_memory_utilization: vLLM's, in (0, 1].
        max_model_len: the longest request (None: unchecked). cpu_offload_gb: weights per GPU moved to
        host memory. prefix_caching, async_scheduling: vLLM v1's defaults (on). kv_cache_dtype: vLLM's
        --kv-cache-dtype, auto (the model's dtype) or fp8 / fp8_e4m3 / fp8_e5m2 (half the KV bytes: twice
        the KV tokens, read in the GPU's measured FP8-cache attention time).
    policy_table: the table the POLICY plans with (a built-in name or CSV, read like `table`, with the same
        mode and layers); None = the step's own. A different table models a scheduler whose profiled costs
        are off from the hardware's: steps are still timed by the deployment's.
    prefill_request_seconds: seconds added to a step per request prefilling in it, beyond its prompt
        tokens' share of the cost table (an engine that pads the batch to the prompt, or runs prefill steps
        outside its captured decode graphs); 0 = prompt tokens cost what verify tokens cost.
    pad_token_seconds: seconds per verify slot the engine pads on a pure-decode step, R·(1 + max_r ℓ_r) −
        Σ_r (1 + ℓ_r): specbed's engine runs its MLPs on the packed tokens but attention over the padded
        [R, 1 + max ℓ] rows (`specbed engine profile` measures it); 0 (default) = a flattened batch.
    padded_context_seconds: seconds per padded KV slot, charged every step: (running requests) × the
        longest context among them (prompt + generated tokens). Specbed's engine pads every row's KV to the
        step's longest (`specbed engine profile --context 0` measures it, with a table at no context);
        0 (default) = paged attention, which reads each request's own KV (the table's kv_token_seconds).
    """

    cost: str = "h200-v4flash"
    cost_mode: str = "step"
    layers: int | None = None
    ep: int | None = None
    max_cudagraph_capture_size: int | None = None
    cudagraph_capture_sizes: tuple[float, ...] | None = None
    eager_factor: float | None = None
    model: str | None = None
    gpu: str | None = None  # None: h100 for a deployment
    precision: str | None = None
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION
    max_model_len: int | None = None
    cpu_offload_gb: float = 0.0
    prefix_caching: bool = True
    async_scheduling: bool = True
    kv_cache_dtype: str = "auto"
    policy_cost: str | None = None
    prefill_request_seconds: float = 0.0
    pad_token_seconds: float = 0.0
    padded_context_seconds: float = 0.0

    def _check_cost(self) -> None:
        s = "cost"
        self._check_kind()
        if not self.cost or not isinstance(self.cost, str):
            raise InputError("must name a built-in cost table, a CSV file or a fit file", field="cost.table")
        if self.policy_cost is not None and (not isinstance(self.policy_cost, str) or not self.policy_cost):
            raise InputError("must name a built-in cost table or a CSV file", field="cost.policy_table")
        check_choice(s, "mode", self.cost_mode, ("step", "linear"))
        for key in ("ep", "layers"):
            if getattr(self, key) is not None:
                check_range(s, key, getattr(self, key), 1)
        if self.ep not in (None, 1) and not str(self.cost).lower().endswith(".json"):
            raise InputError("prices a fit file's table (a MoE model's) only; a built-in or CSV table is "
                             "priced as it is: it would be ignored", field="cost.ep")  # fmt: skip
        for key in ("prefill_request_seconds", "pad_token_seconds", "padded_context_seconds"):
            check_range(s, key, getattr(self, key), 0.0)
        self._check_graphs()
        self._check_deployment()

    def _check_kind(self) -> None:
        """A key of the other kind (not at its default) is an error: it would be ignored."""
        defaults = {f.name: f.default for f in fields(CostKeys)}
        if self.model is not None:
            for name, fieldname in TABLE_KEYS.items():
                if getattr(self, fieldname) != defaults[fieldname]:
                    what = f"a table key, but this [cost] names a deployment (model {self.model!r})"
                    raise InputError(f"{what}: [cost] holds a table or a deployment", field=f"cost.{name}")
            return
        for name in DEPLOYMENT_KEYS:
            if getattr(self, name) != defaults[name]:
                raise InputError("a deployment key, but this [cost] names no model: set cost.model (a [cost] "
                                 "section holds a table or a deployment)", field=f"cost.{name}")  # fmt: skip

    def _check_graphs(self) -> None:
        s = "cost"
        if self.max_cudagraph_capture_size is not None:
            check_range(s, "max_cudagraph_capture_size", self.max_cudagraph_capture_size, 1)
        if self.cudagraph_capture_sizes is not None:
            try:
                sizes = check_capture_sizes(self.cudagraph_capture_sizes)
            except ValueError as err:
                raise InputError(str(err), field="cost.cudagraph_capture_sizes") from None
            object.__setattr__(self, "cudagraph_capture_sizes", sizes)
        if self.eager_factor is not None:
            check_range(s, "eager_factor", self.eager_factor, 1.0)

    def _check_deployment(self) -> None:
        s = "cost"
        check_utilization(self.gpu_memory_utilization, f"{s}.gpu_memory_utilization")
        check_range(s, "cpu_offload_gb", self.cpu_offload_gb, 0.0)
        if self.max_model_len is not None:
            check_range(s, "max_model_len", self.max_model_len, 2)  # a prompt token and an output token
        if self.gpu is not None:
            get_gpu(self.gpu, field=f"{s}.gpu")
        if self.precision is not None:
            check_choice(s, "precision", self.precision.lower(), tuple(PRECISIONS))
        check_choice(s, "kv_cache_dtype", self.kv_cache_dtype, KV_CACHE_DTYPES)
        if self.model is not None:
            shape = get_model(self.model, field=f"{s}.model")
            precision_bytes(self.precision, shape, field=f"{s}.precision")
            check_tp_heads(shape, getattr(self, "tp", None) or 1)
        kv = getattr(self, "kv_tokens", None)
        if kv is None and self.model is None:
            object.__setattr__(self, "kv_tokens", DEFAULT_KV_TOKENS)
        elif kv is not None:
            check_range("server", "kv_tokens", kv, 1)
