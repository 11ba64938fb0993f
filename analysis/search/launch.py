"""The winner as something to deploy: a `vllm serve` command line and its `specbed run` TOML.

Role: map a resolved simulator config onto vLLM's serving flags — tensor parallelism (GPUs per replica),
data parallelism (replicas), vLLM's own knobs when the config names them (`cost.model`, precision,
`gpu_memory_utilization`, `max_model_len`, `cpu_offload_gb`, prefix caching),
`--max-num-seqs`, `--max-num-batched-tokens`, CUDA-graph capture sizes
(`--compilation-config`), and `--speculative-config` JSON with vLLM's keys: `method`, `model` (the draft
model, where the method needs one) and `num_speculative_tokens` (a draft LM in `drafter.model`,
`specsched.draft_lm`: method "draft_model" and its Hugging Face id). Confidence-scheduled policies (marked
`adaptive_verification` in `specsched.registry`: dspark, dspark_global, goodput, …) set
`enable_adaptive_verification` (vLLM's DSpark scheduling, PR #47808); a fixed-k policy verifies k;
`policy.draft = "adaptive"` adds the per-batch-size draft schedule of `specbed plan --draft-schedule`
(`analysis.draft_schedule.schedule`) beside it, with the deepest K as num_speculative_tokens. Names the
space does not give (`[search] model`, `draft_models`) are left as
<PLACEHOLDERS> to fill in.

May import: the standard library, numpy, `analysis.model`, `analysis.search.prices`, `sim`, `specbed`,
`specsched` (lazily).
"""

from __future__ import annotations

import json
import shlex

from analysis.model import flatten, set_text
from analysis.search.prices import gpus_per_replica
from analysis.spec_config import speculative_config


def _sim_config(config: dict):
    from sim.config_io import load_config

    return load_config(None, [f"{k}={set_text(v)}" for k, v in flatten(config).items()])


def winner_toml(config: dict, header: str) -> str:
    from sim.config_io import config_to_toml

    lines = [f"# {line}" for line in header.splitlines()]
    return "\n".join(lines) + "\n" + config_to_toml(_sim_config(config))


def draft_schedule(config: dict) -> list[dict] | None:
    """The per-batch-size depth schedule of an adaptive-drafting config (else None)."""
    if config["policy"].get("draft") != "adaptive" or config["drafter"]["name"] == "none":
        return None
    from analysis.draft_schedule import BATCH_SIZES, deployment_schedule

    cfg = _sim_config({**config, "workload": {**config["workload"], "num_requests": 200}})
    seqs = int(config["server"]["max_num_seqs"])
    sizes = [b for b in BATCH_SIZES if b <= seqs] or [seqs]
    return deployment_schedule(cfg, sizes)[2]  # the same schedule `plan --draft-schedule` prints


def _vllm_knobs(server: dict) -> list[str]:
    """The flags of a config that names its deployment in vLLM's own knobs (`cost.model`, ...)."""
    if server.get("model") is None:
        return []
    out = ["--gpu-memory-utilization", f"{server.get('gpu_memory_utilization', 0.9):g}"]
    if server.get("max_model_len") is not None:
        out += ["--max-model-len", str(server["max_model_len"])]
    if server.get("cpu_offload_gb"):
        out += ["--cpu-offload-gb", f"{server['cpu_offload_gb']:g}"]
    precision = str(server.get("precision") or "").lower()
    if precision == "fp8":
        out += ["--quantization", "fp8"]
    elif precision in ("fp16", "bf16"):
        out += ["--dtype", {"fp16": "float16", "bf16": "bfloat16"}[precision]]
    if server.get("prefix_caching") is False:
        out.append("--no-enable-prefix-caching")
    return out


def _hf_id(name: str | None) -> str | None:
    """The Hugging Face id vLLM loads for a catalogue model name (`llama3.1-8b`: its first checkpoint)."""
    if name is None:
        return None
    from specsched.price.models import find_model

    shape = find_model(name)
    return shape.hf_ids[0] if shape is not None and shape.hf_ids else name


def vllm_command(config: dict, model: str | None, draft_models: dict[str, str], schedule=None) -> str:
    """A ready `vllm serve …` line for the config (module docstring)."""
    server = {**config["server"], **config.get("cost", {})}  # [cost]: model, gpu, graphs, vLLM knobs
    args = ["vllm", "serve", model or _hf_id(server.get("model")) or "<MODEL>"]
    args += ["--tensor-parallel-size", str(gpus_per_replica(config))]
    args += _vllm_knobs(server)
    if int(server.get("replicas", 1)) > 1:
        args += ["--data-parallel-size", str(server["replicas"])]
    args += ["--max-num-seqs", str(server["max_num_seqs"])]
    args += ["--max-num-batched-tokens", str(server["max_num_batched_tokens"])]
    graphs = {}
    if server.get("cudagraph_capture_sizes") is not None:
        graphs["cudagraph_capture_sizes"] = [int(s) for s in server["cudagraph_capture_sizes"]]
    if server.get("max_cudagraph_capture_size") is not None:
        graphs["max_cudagraph_capture_size"] = int(server["max_cudagraph_capture_size"])
    if graphs:
        args += ["--compilation-config", json.dumps(graphs, separators=(",", ":"))]
    spec = speculative_config(config, draft_models, schedule)
    if spec is not None:
        args += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    return " ".join(shlex.quote(a) for a in args)
