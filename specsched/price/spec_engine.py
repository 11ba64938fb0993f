"""How a serving engine runs one EAGLE-style speculative step, and the sourced constants that price it.

Role: `ENGINES` names the engines whose speculative step specbed prices ("vllm": vLLM v1 ≥ v0.14;
"sglang": SGLang's EAGLE worker v0.4.x, the one the EAGLE-3 paper's Table 3 ran); `engine_step(...)` turns
an engine and a drafter's pass prices into the parts `specsched.DraftCost` carries: the first draft pass
over every verified position (`first`, a table over those tokens), the later passes (`own`, over the
drafting requests) and the per-step fixed seconds (`step_s`). Nothing here is fitted to speculative runs:
the GPU terms are the no-speculation calibration's (`specsched.price.vllm.shipped_knobs`), the host terms are
counts read from the engines' source times a per-op cost, and one measured no-speculation figure.

vLLM v1 (v0.14+; `vllm/v1/spec_decode/eagle.py`, read this session):
    - padded drafter batch (the default): the first draft pass runs over all R·(1 + γ) verified positions,
      the LM head over the R positions it samples from; then γ − 1 passes over R — all in CUDA graphs.
    - async scheduling is on by default with EAGLE/MTP (vllm-project/vllm#31998, merged 2026-01-08): the
      host's per-step work overlaps the GPU, as in the no-speculation calibration (step_s = 0 there).
SGLang v0.4.x EAGLE worker (`python/sglang/srt/speculative/eagle_worker.py`, `eagle_utils.py`; v0.4.4 wheel
and v0.4.5 snapshot read; `server_args.py`; `managers/scheduler.py`, `scheduler_output_processor_mixin.py`):
    - the overlap scheduler is turned off for EAGLE/EAGLE3 ("Overlap scheduler is disabled because of
      using eagle speculative decoding"), while the no-speculation baseline keeps it: the scheduler's
      host work is exposed in the speculative step, hidden in the baseline. It is priced as
          exposed host = SGLANG_HOST_STEP_S + R · (SGLANG_HOST_REQ_S + SGLANG_HOST_TOKEN_S · (E − 1))
      (R drafting requests, E tokens each emits a step). Per request (read in v0.4.4): filter_batch's
      finished scan; verify's loop over every accepted token (output_ids.append + Req.check_finished, the
      accepted-index lists); prepare_extend_after_decode's loop; process_batch_result_decode's loop
      (check_finished again, zip over the verified-id tensor: one view per emitted token);
      stream_output_generation (stream_interval 1: a dozen columns, prompt + output concatenated for
      the detokenizer window) and the pickled BatchTokenIDOut. Per request and per emitted token are
      measured on a model of those loops (`python -m bench.bench_spec_price --host`, this session's
      2-core VM, fastest of 40 trials; the bench prints ×0.5 and ×2 rows). The per-step part is the one
      published no-speculation overlap measurement (sgl-project/sglang#5608: Llama-3.1-8B decode at 16
      requests on a TP-4 PD decode server, 3053.86 tok/s logged without the overlap schedule, 3458.31
      with it: 0.613 ms a step; no second batch size was found for SGLang v0.4.x) less the
      16 requests' no-speculation loops (`SGLANG_NOSPEC_REQ_S`, measured alike): 0.613 − 16 · 6.5 µs.
      The loop model skips real objects' extra fields, the zmq send and the detokenizer: a lower bound.
    - draft: γ − 1 passes in the draft CUDA graph ("we get 1 token from draft prefill and (#spec steps
      − 1) tokens here"); verify: the target's TARGET_VERIFY forward, a CUDA-graph mode. With EAGLE the
      captured batch sizes are 1..32 (`get_batch_sizes_to_capture`) and padding is off
      (`disable_cuda_graph_padding`): above 32 requests the draft passes run eagerly, priced
      max(GPU, SGLANG_DECODE_OPS × EAGER_OP_S); the target's eager verify (~400 launches, ~4 ms) stays
      under its GPU work (≥ 8 ms at 4 · 33 tokens) and is not priced.
    - draft extend after verify (the pass that yields the next step's first draft token, over the
      accepted positions ≤ R·(1 + γ)): ForwardMode.DRAFT_EXTEND, not a CUDA-graph mode until
      sgl-project/sglang#6606 (2025-05-26) — it runs eagerly: max(its GPU work, its ops × EAGER_OP_S).
    - host syncs (`.item()` before the draft graph, `.tolist()` of the accepted lengths after verify)
      drain the GPU queue, so the host ops around them are on the critical path (`SGLANG_HOST_OPS`).

EAGER_OP_S: host seconds to issue one eager PyTorch op (Python → dispatcher → cudaLaunchKernel): the
dispatch chain's per-layer costs (Python ~1 µs, pybind ~1, autograd 1–3, ATen 1–2, backend 1–5, driver
launch 1–3 µs) sum to 5–25 µs an op; 10 µs is taken, and `bench.bench_spec_price` prints 5 and 20 µs.

Versions (`drafter.engine = vllm-0.9 | vllm-0.10 | vllm-0.15 | sglang-0.4 | sglang-0.5 | trtllm`; `vllm` and
`sglang` are aliases of vllm-0.15 and sglang-0.4): `specsched.spec_versions`, each a small table of what
that version does, read from its code.

May import: numpy, the standard library, `specsched.io.errors`, `specsched.spec_versions`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsched.io.errors import InputError
from specsched.spec_versions import engine_versions

#: host seconds per eager PyTorch op (module docstring)
EAGER_OP_S = 10e-6
#: sgl-project/sglang#5608: a no-speculation decode step at 16 requests, overlap schedule off − on (s)
SGLANG_OVERLAP_GAIN_S = 16 / 3053.86 - 16 / 3458.31
#: the no-speculation scheduler loops a request a step (measured: `bench.bench_spec_price --host`)
SGLANG_NOSPEC_REQ_S = 6.5e-6
#: the scheduler's per-step host work: #5608's gain less its 16 requests' loops (module docstring)
SGLANG_HOST_STEP_S = SGLANG_OVERLAP_GAIN_S - 16 * SGLANG_NOSPEC_REQ_S
#: the speculative step's loops a drafting request (its first emitted token included) and a further
#: emitted token (measured: `bench.bench_spec_price --host`, medians of 7 runs: 6.2–6.8, 8.4–9.3 and
#: 1.5–2.5 µs; runs in a busier spell of the shared machine read about twice as much)
SGLANG_HOST_REQ_S = 9.0e-6
SGLANG_HOST_TOKEN_S = 1.6e-6
#: the largest batch SGLang v0.4.x captures in CUDA graphs with EAGLE (padding off)
SGLANG_GRAPH_MAX_BS = 32
#: eager ops of one draft decode pass outside the graph: input select / slice / positions (4), the
#: layer (15), the LM head and hidden capture (2), softmax, top-1, hot-token map (3), backend plan (1)
SGLANG_DECODE_OPS = 25
#: eager ops of SGLang's draft-extend pass of a one-layer EAGLE drafter, counted from the v0.4.5 worker:
#: prepare_extend_after_decode (6), ForwardBatch.init_new for an extend (10), FlashInfer extend metadata
#: and plan (8); the layer — embedding, fc, two norms, concat, qkv, rope, KV store, attention, o_proj,
#: add + norm, gate_up, SiLU·mul, down, final norm (15); last-position gather (2), LM head (1), softmax +
#: top-k for the next draft (2), draft-to-target vocabulary map (1)
SGLANG_EXTEND_OPS = 45
#: host ops between the GPU syncs of one SGLang EAGLE step, outside the CUDA graphs: before the draft
#: graph — KV-slot allocation (3), draft cache locations (1), seq_lens sum `.item()` (1), positions (1),
#: ForwardBatch.init_new (8), graph input copies (6); after the accepted lengths' `.tolist()` — freeing
#: rejected slots (3), the next draft input and batch filter (5), accepted logits/hidden gathers (2)
SGLANG_HOST_OPS = 30


@dataclass(frozen=True)
class ServingEngine:
    """How an engine runs an EAGLE-style step: both run the first of the γ draft passes over every
    verified position and the other γ − 1 over the drafting requests in CUDA graphs. first_eager: that
    first pass runs eagerly; extend_ops / host_ops / host_step_s: the host terms above (0 where hidden);
    host_request_s / host_token_s: exposed host seconds a drafting request and a further emitted token;
    graph_max_bs: the largest batch its draft passes replay in graphs (None: any; eager above, with
    decode_ops ops a pass)."""

    name: str
    first_eager: bool
    extend_ops: int
    host_ops: int
    host_step_s: float
    source: str
    host_request_s: float = 0.0
    host_token_s: float = 0.0
    graph_max_bs: int | None = None
    decode_ops: int = 0
    pass_ops: int = 0
    prep_ops: int = 0
    reduced_vocab_ops: int = 0
    fusion_ops: int = 0
    nospec_host_s: float = 0.0
    verify_kernel: str = "fa3"
    head_gather: int = 1
    full_vocab_map: bool = False
    layer_ops: int = 2
    version: str = ""


ENGINES: dict[str, ServingEngine] = {
    "vllm": ServingEngine("vllm", False, 0, 0, 0.0,
                   "vLLM v1 ≥ v0.14: padded drafter batch, CUDA graphs, async scheduling (vllm#31998)"),
    "sglang": ServingEngine("sglang", True, SGLANG_EXTEND_OPS, SGLANG_HOST_OPS, SGLANG_HOST_STEP_S,
                     "SGLang v0.4.x EAGLE worker: overlap off, draft extend eager (before sglang#6606)",
                     SGLANG_HOST_REQ_S, SGLANG_HOST_TOKEN_S, SGLANG_GRAPH_MAX_BS, SGLANG_DECODE_OPS),
}  # fmt: skip
ENGINES.update(engine_versions(ENGINES["vllm"], ENGINES["sglang"]))
ENGINES["vllm"], ENGINES["sglang"] = ENGINES["vllm-0.15"], ENGINES["sglang-0.4"]  # the aliases


def get_engine(name, *, field: str = "drafter.engine") -> ServingEngine:
    """The engine `name` (a `ServingEngine` passes through); InputError naming `field` otherwise."""
    if isinstance(name, ServingEngine):
        return name
    if not isinstance(name, str) or name.lower() not in ENGINES:
        raise InputError(f"must be one of {', '.join(ENGINES)}; got {name!r}", field=field)
    return ENGINES[name.lower()]


def first_pass_seconds(engine: ServingEngine, gpu_seconds, *, op_s: float = EAGER_OP_S) -> np.ndarray:
    """float64 seconds of the first draft pass from its GPU seconds (graph-replayed: as is; eager: the host
    issuing `extend_ops` ops one after another, overlapping the GPU: the slower of the two)."""
    gpu_seconds = np.asarray(gpu_seconds, dtype=np.float64)
    if not engine.first_eager:
        return gpu_seconds
    return np.maximum(gpu_seconds, engine.extend_ops * op_s)


def host_step_seconds(engine: ServingEngine, *, op_s: float = EAGER_OP_S) -> float:
    """Per-step seconds of host work a speculative step exposes beyond what the no-speculation step hides
    (the per-request part: `host_request_seconds`)."""
    return engine.host_step_s + engine.host_ops * op_s


def host_request_seconds(engine: ServingEngine, emitted: float, *, scale: float = 1.0) -> float:
    """Exposed host seconds a drafting request adds to a step in which it emits `emitted` ≥ 1 tokens
    (`scale`: a sensitivity factor on the measured loop costs)."""
    return scale * (engine.host_request_s + engine.host_token_s * max(float(emitted) - 1.0, 0.0))


def draft_pass_seconds(engine: ServingEngine, m, gpu_seconds, *, op_s: float = EAGER_OP_S) -> np.ndarray:
    """float64 seconds of a later draft pass over `m` requests from its GPU seconds: graph-replayed up to
    the engine's graph_max_bs, above it eager (the slower of the GPU and `decode_ops` host ops)."""
    gpu_seconds = np.asarray(gpu_seconds, dtype=np.float64)
    if engine.graph_max_bs is None:
        return gpu_seconds
    eager = np.maximum(gpu_seconds, engine.decode_ops * op_s)
    return np.where(np.asarray(m) > engine.graph_max_bs, eager, gpu_seconds)
