"""A vLLM deployment as a runnable simulation: `prepare(spec, knobs, workload, block_keys)` -> `Prepared`.

Role: the top of the vLLM-deployment path (`specbed validate`, `specbed cost calibrate`): the spec and
knobs priced in `specsched.price.vllm` become a plain autoregressive run on any workload, finished by
`sim.run.assemble` as every run is (the same acceptance model and random streams, `sim.streams`).

May import: numpy, the standard library, `specsched`, the other sim modules.
"""

from __future__ import annotations

import numpy as np

import specsched
from sim.config import DrafterConfig, PolicyConfig, ServerConfig, SimConfig, WorkloadConfig
from sim.prefix_cache import own_keys
from sim.run import assemble
from sim.streams import stream_rngs
from sim.wiring import Prepared
from sim.workload import Workload
from specsched.io.errors import InputError
from specsched.price.knobs import Knobs
from specsched.price.kv import BLOCK_SIZE
from specsched.price.vllm import VllmSpec, cost_table, offload_blocks


def prepare(
    spec: VllmSpec,
    knobs: Knobs,
    workload: Workload,
    block_keys: list | None,
    seed: int = 0,
    *,
    concurrency: int | None = None,
) -> Prepared:
    """A `Prepared` run of `workload` on `spec` (autoregressive: policy "ar", no drafter); dp replicas
    behind a least-outstanding router. InputError if a request cannot fit in the KV cache.

    concurrency: None runs the workload's arrivals (open loop); N runs it as a benchmark client at fixed
    concurrency does (`vllm bench serve --max-concurrency N`, inference-perf/genai-perf concurrency
    mode): N requests in flight, the next request id sent the instant one completes, no think time, and
    no earlier than its arrival time where the workload has any (a paced client; `sim.routing.ClosedLoop`;
    docs/memory.md "Closed-loop clients")."""
    kv = spec.kv_capacity()
    longest = int(np.max(workload.input_tokens + workload.output_tokens)) if len(workload) else 0
    if spec.max_model_len is not None and longest > spec.max_model_len:
        raise InputError(
            f"a request needs {longest} tokens, more than max_model_len {spec.max_model_len}",
            field="cost.max_model_len",
        )
    if longest > kv:
        raise InputError(
            f"a request needs {longest} KV tokens, more than the {kv} a replica holds",
            field="server.kv_tokens",
        )
    if spec.prefix_caching and block_keys is None:  # prompts that share nothing still cache their own blocks
        block_keys = own_keys(workload.input_tokens, BLOCK_SIZE)
    budget = max(spec.max_num_batched_tokens, spec.max_num_seqs)
    # the config names the deployment itself (its `[cost]` keys; cudagraphs and KV offload are the spec's)
    server = ServerConfig(
        model=spec.model,
        gpu=spec.gpu,
        precision=spec.precision,
        gpu_memory_utilization=spec.gpu_memory_utilization,
        max_model_len=spec.max_model_len,
        cpu_offload_gb=spec.cpu_offload_gb,
        prefix_caching=spec.prefix_caching,
        async_scheduling=spec.async_scheduling,
        replicas=spec.dp,
        tp=spec.tp,
        max_num_seqs=spec.max_num_seqs,
        max_num_batched_tokens=budget,
        kv_tokens=kv,
    )
    extra = {}
    if concurrency is not None:
        extra["workload"] = WorkloadConfig(kind="closed", concurrency=concurrency, num_requests=len(workload))
        workload = closed_loop(workload)
    cfg = SimConfig(seed=seed, drafter=DrafterConfig(name="none", gamma=0), policy=PolicyConfig(name="ar"),
                    server=server, **extra)  # fmt: skip
    serving = dict(block_keys=block_keys, block_size=BLOCK_SIZE, prefix_offload_blocks=offload_blocks(spec),
                   prefix_caching=spec.prefix_caching and block_keys is not None,
                   async_scheduling=spec.async_scheduling)  # fmt: skip
    ar, gpus = specsched.make_policy("ar"), spec.tp * spec.dp
    return assemble(cfg, cost_table(spec, knobs), gpus, ar, workload, stream_rngs(seed), **serving)


def closed_loop(workload: Workload) -> Workload:
    """`workload`'s requests for a closed loop: no think time (a benchmark client sends the next request as
    soon as one completes); its arrival times, where any is past 0, stay as the earliest send times of a
    paced client (`--request-rate R --max-concurrency N`), else none (all sent as slots free)."""
    n, arrival = len(workload), workload.arrival_s
    paced = arrival if arrival is not None and np.any(arrival > 0) else None
    return Workload(paced, workload.input_tokens, workload.output_tokens, workload.domain, np.zeros(n),
                    workload.clipped, workload.session)  # fmt: skip
