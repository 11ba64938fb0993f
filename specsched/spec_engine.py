"""How a serving engine runs one EAGLE-style speculative step, and the sourced constants that price it.

Role: `ENGINES` names the engines whose speculative step specbed prices ("vllm": vLLM v1 ≥ v0.14;
"sglang": SGLang's EAGLE worker v0.4.x, the one the EAGLE-3 paper's Table 3 ran); `engine_step(...)` turns
an engine and a drafter's pass prices into the parts `specsched.DraftCost` carries: the first draft pass
over every verified position (`first`, a table over those tokens), the later passes (`own`, over the
drafting requests) and the per-step fixed seconds (`step_s`). Nothing here is fitted to speculative runs:
the GPU terms are the no-speculation calibration's (`sim.vllm_deploy.shipped_knobs`), the host terms are
counts read from the engines' source times a per-op cost, and one measured no-speculation figure.

vLLM v1 (v0.14+; `vllm/v1/spec_decode/eagle.py`, read this session):
    - padded drafter batch (the default): the first draft pass runs over all R·(1 + γ) verified positions,
      the LM head over the R positions it samples from; then γ − 1 passes over R — all in CUDA graphs.
    - async scheduling is on by default with EAGLE/MTP (vllm-project/vllm#31998, merged 2026-01-08): the
      host's per-step work overlaps the GPU, as in the no-speculation calibration (step_s = 0 there).
SGLang v0.4.x EAGLE worker (`python/sglang/srt/speculative/eagle_worker.py`, v0.4.5 snapshot read this
session; `server_args.py`; `forward_batch_info.py`):
    - the overlap scheduler is turned off for EAGLE/EAGLE3 ("Overlap scheduler is disabled because of
      using eagle speculative decoding"), while the no-speculation baseline keeps it: the scheduler's
      per-step host work is exposed. Priced by `SGLANG_HOST_STEP_S`, measured on SGLang without
      speculation (sgl-project/sglang#5608: Llama-3.1-8B decode at 16 requests, 3053.86 tok/s without
      the overlap schedule, 3458.31 with it: 16/3053.86 − 16/3458.31 = 0.613 ms a step).
    - draft: γ − 1 passes in the draft CUDA graph ("we get 1 token from draft prefill and (#spec steps
      − 1) tokens here"); verify: the target's TARGET_VERIFY forward, a CUDA-graph mode.
    - draft extend after verify (the pass that yields the next step's first draft token, over the
      accepted positions ≤ R·(1 + γ)): ForwardMode.DRAFT_EXTEND, not a CUDA-graph mode until
      sgl-project/sglang#6606 (2025-05-26) — it runs eagerly: max(its GPU work, its ops × EAGER_OP_S).
    - host syncs (`.item()` before the draft graph, `.tolist()` of the accepted lengths after verify)
      drain the GPU queue, so the host ops around them are on the critical path (`SGLANG_HOST_OPS`).

EAGER_OP_S: host seconds to issue one eager PyTorch op (Python → dispatcher → cudaLaunchKernel): the
dispatch chain's per-layer costs (Python ~1 µs, pybind ~1, autograd 1–3, ATen 1–2, backend 1–5, driver
launch 1–3 µs) sum to 5–25 µs an op; 10 µs is taken, and `bench.bench_spec_price` prints 5 and 20 µs.

May import: numpy, the standard library, `specsched.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsched.errors import InputError

#: host seconds per eager PyTorch op (module docstring)
EAGER_OP_S = 10e-6
#: SGLang's scheduler host work a decode step exposes with the overlap schedule off (sglang#5608)
SGLANG_HOST_STEP_S = 16 / 3053.86 - 16 / 3458.31
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
class Engine:
    """How an engine runs an EAGLE-style step: both run the first of the γ draft passes over every
    verified position and the other γ − 1 over the drafting requests in CUDA graphs. first_eager: that
    first pass runs eagerly; extend_ops / host_ops / host_step_s: the host terms above (0 where hidden)."""

    name: str
    first_eager: bool
    extend_ops: int
    host_ops: int
    host_step_s: float
    source: str


ENGINES: dict[str, Engine] = {
    "vllm": Engine("vllm", False, 0, 0, 0.0,
                   "vLLM v1 ≥ v0.14: padded drafter batch, CUDA graphs, async scheduling (vllm#31998)"),
    "sglang": Engine("sglang", True, SGLANG_EXTEND_OPS, SGLANG_HOST_OPS, SGLANG_HOST_STEP_S,
                     "SGLang v0.4.x EAGLE worker: overlap off, draft extend eager (before sglang#6606)"),
}  # fmt: skip


def get_engine(name: str, *, field: str = "drafter.engine") -> Engine:
    """The engine `name`; InputError naming `field` otherwise."""
    if not isinstance(name, str) or name.lower() not in ENGINES:
        raise InputError(f"must be one of {', '.join(ENGINES)}; got {name!r}", field=field)
    return ENGINES[name.lower()]


def first_pass_seconds(engine: Engine, gpu_seconds, *, op_s: float = EAGER_OP_S) -> np.ndarray:
    """float64 seconds of the first draft pass from its GPU seconds (graph-replayed: as is; eager: the host
    issuing `extend_ops` ops one after another, overlapping the GPU: the slower of the two)."""
    gpu_seconds = np.asarray(gpu_seconds, dtype=np.float64)
    if not engine.first_eager:
        return gpu_seconds
    return np.maximum(gpu_seconds, engine.extend_ops * op_s)


def host_step_seconds(engine: Engine, *, op_s: float = EAGER_OP_S) -> float:
    """Seconds of host work a speculative step exposes beyond what the no-speculation step hides."""
    return engine.host_step_s + engine.host_ops * op_s
