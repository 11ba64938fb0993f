"""What each serving-engine version does in a speculative step: a small table per version, read from its code.

Role: `engine_versions(vllm, sglang)` returns the versioned `spec_engine.ServingEngine`s (`vllm-0.8`,
`vllm-0.9`, `vllm-0.10`, `vllm-0.11`, `vllm-0.12`, `vllm-0.15`, `sglang-0.4`, `sglang-0.5`, `trtllm`) made
from the two sourced base rows of `spec_engine` (vLLM ≥ 0.14 and SGLang v0.4.x). The fields each version
sets (all host counts are eager launches the host issues one after another, each `op_s` seconds,
`specsched.spec_knobs`):

    pass_ops          launches of one later draft pass outside a whole-loop CUDA graph (0: the loop is one
                      graph replay, or the host runs ahead of the GPU); priced max(GPU pass, pass_ops·op_s)
                      because the draft phase starts on an empty GPU queue (a sync after sampling)
    prep_ops          per-step launches of the proposer's input preparation and the rejection sampler, on the
                      critical path between the two syncs (0 where the host overlaps the GPU)
    reduced_vocab_ops launches a pass adds for a reduced draft vocabulary (EAGLE-3): the draft-to-target map
    fusion_ops        launches the first pass adds for EAGLE-3's fusion of three target hidden states
    nospec_host_s     host seconds every step exposes, with or without speculation (no async scheduling)
    verify_kernel     the attention kernel the verify pass's K + 1 query tokens go through: "fa3" (the
                      calibrated decode path's varlen FlashAttention: KV read at eta_kv) or "flashinfer-mask"
                      (FlashInfer's prefill kernel with a custom mask: KV read at eta_kv · mask_eff)
    head_gather       collectives of the LM head per draft pass under TP (vocab-parallel logits gathered)
    full_vocab_map    a reduced draft vocabulary's logits are scattered into a full target-vocabulary tensor
                      before the argmax (vLLM's Eagle3LlamaForCausalLM.compute_logits: arange, add,
                      new_full(-inf), index_put; the sampling reads the target's vocabulary), not mapped
                      after a top-k over the draft vocabulary (SGLang's hot-token map)

vLLM 0.8 (V1): as 0.9/0.10 below, but the EAGLE head ran eagerly — torch.compile and CUDA graphs for it came
with vllm-project/vllm#17211 (EAGLE, 2025-04) and #17504 (EAGLE-3: "trace before (propose -> ~16ms) ... after
(propose -> ~6ms)") — so a pass issues its layer's 11 launches and the fusion's 3 instead of 3 graph launches;
its loop body is shorter than 0.9's (no position clamping, no graph buffers): 23 launches a pass, 18 for
the first (read in the 0.8.4 wheel, session 4).
vLLM 0.9 / 0.10 (V1; `vllm/v1/spec_decode/eagle.py` `propose`, `vllm/v1/worker/gpu_model_runner.py`): no
async scheduling by default (it became the default with EAGLE/MTP in vllm-project/vllm#31998, v0.14), and the
runner turns the sampled ids into Python lists (`.tolist()`) before `propose_draft_token_ids`, so the draft
phase starts on an empty GPU queue and ends in `draft_token_ids.tolist()`. Each of the K − 1 later passes runs
the draft model as a PIECEWISE CUDA graph (attention stays eager) and, around it, eager tensor ops counted in
the loop body: `.int()`, positions += 1, `>=`, `where`, seq_lens += 1, masked_fill_, `//`, gather, `*`, `%`,
`+`, masked_fill_ (12), three buffer copies (3), two graph pieces and the attention call (3), compute_logits'
LM head and argmax (2), plus `build_for_drafting`'s metadata (≈ 2 op-equivalents of Python): 22. The host
work between a sync and the GPU's next kernel is exposed whole (the GPU queue is empty): per step 31 ops
(`VLLM_V0_PREP_OPS`, listed at the constant: the spec-decode metadata copies before the target forward,
then everything from the sampler's `.cpu()` through `prepare_inputs`, the target gathers and propose's two
`.item()` syncs); the first pass's own 11 launches (`VLLM_V0_FIRST_OPS`) overlap its GPU work, priced
max(GPU, 11 · op_s). (Session 3 counted 16 exposed + a first pass of 29 overlapping; the recount of
session 4, read in the v0.9.2 wheel, moves the preparation before the syncs out of the overlapping pass.)
EAGLE-3 adds `combine_hidden_states` (one matmul) and the runner's aux-state gather (three
`h[token_indices]` and a `torch.cat` where EAGLE-1 gathers one state: 3 more launches; v0.9.2
`gpu_model_runner.py` `propose_draft_token_ids`) to that exposed preparation and, per pass, the scatter of
its 32k logits into a -inf tensor of the target's vocabulary before the argmax (`compute_logits`: arange,
add, new_full, index_put: 4 launches). Per step
the host's scheduling and output processing stay exposed in both arms: 1.207 ms, SpecDecode-Bench's own
per-step overhead on vLLM v0.10.1, Llama-3.1-8B, H100 (github.com/SpecDecode-Bench/simulator predictor.py
`overhead_constant_per_step`, fitted on their profiles).
vLLM 0.11: the padded drafter batch arrives, on by default (0.11.0 `config/speculative.py`
`disable_padded_drafter_batch: bool = False`; absent from 0.10.1.1): `prepare_inputs_padded` and
`prepare_next_token_ids_padded` run on the device ("No blocking CPU operations should be introduced in this
function") and propose has no `.item()`. But 0.11.0's runner decides whether to propose on
`spec_decode_common_attn_metadata.seq_lens.max() + num_spec_tokens <= max_model_len`, a device tensor turned
into a Python bool — a sync on the target forward and the sampler — so the draft phase still starts on an
empty GPU queue: priced as vLLM 0.10 (its padded preparation — the next-token selection, the rejected
counts, the index and slot gathers, the sync's max and compare: ≈ 30 ops — counted as vLLM 0.10's 31).
vLLM 0.12–0.13: the check reads `max_seq_len`, a host int (0.12.0 / 0.13.0 `gpu_model_runner.py`), so the
proposer's launches are issued while the target forward runs; without async scheduling (0.12.0 / 0.13.0
`config/scheduler.py` `async_scheduling: bool = False`) the step's own host work stays exposed in both
arms (nospec_host_s as vLLM 0.10).
vLLM 0.15: async scheduling with EAGLE/MTP (the host enqueues the step's launches while the previous GPU work
runs) — the base row, no host terms.
SGLang 0.4: the base row (v0.4.4/0.4.5 read: overlap scheduler off for EAGLE, draft extend eager, draft
decode loop in one CUDA graph for 1–32 requests), verify through FlashInfer with a custom mask
(`eagle_utils.py` builds `custom_mask` for TARGET_VERIFY even for chains).
SGLang 0.5: draft extend captured in a CUDA graph (sgl-project/sglang#6606), overlap still off for EAGLE
outside the opt-in spec-v2 path; chains verified with FlashAttention-3 (SpecDecode-Bench's SGLang v0.5.9
runs: "FlashAttention-3 is used for chain"); graphs up to 160 requests (`cuda_graph_max_bs`).
TensorRT-LLM: the drafter runs inside the target's engine / CUDA graph with overlap scheduling — priced as
vllm-0.15 (no host terms); not read line by line this session.

May import: the standard library.
"""

from __future__ import annotations

from dataclasses import replace

#: launches of one later vLLM 0.9/0.10 draft pass (module docstring)
VLLM_V0_PASS_OPS = 22
#: launches of the first draft pass, issued after propose's two syncs so that they overlap its GPU work
#: (vLLM 0.9.2 `eagle.py` propose): the attention metadata (≈ 1 op of Python), the position / hidden buffer
#: copies (2), the model's two graph pieces + attention (3), the last-position gather (1), the LM head and
#: argmax (2), the loop's position / hidden gathers (2)
VLLM_V0_FIRST_OPS = 11
#: host work a speculative step exposes with the GPU queue empty, read in vLLM 0.9.2 (greedy path; 0.10.1
#: is the same up to the metadata builder). Before the target forward (`gpu_model_runner.py`
#: `_calc_spec_decode_metadata`): four index arrays copied host-to-device and the draft-id gather (3): 7.
#: Between the sampler's sync (`parse_output`'s `.cpu()`) and the first draft pass
#: (`propose_draft_token_ids` + `propose` up to its `.item()`s): the next-token tensor (1), the rejected
#: counts' pinned copy (2), `prepare_inputs` (two subtractions, zeros_like, cumsum, and its Triton launch ≈ 2:
#: 6), the target id / position / hidden / slot gathers (4), the last-token indices (1), the input shift
#: (copy + index_put: 2), the sequence lengths (gather, add, cast: 3), two `.max().item()` (a subtraction,
#: two reductions and two syncs: 5): 24. The verify side's bonus / target logits gathers and the rejection
#: kernels are issued while the target forward runs, so they stay hidden. 7 + 24:
VLLM_V0_PREP_OPS = 31
#: EAGLE-3: the draft-to-target scatter a pass (arange, add, new_full, index_put); before propose's syncs
#: the fusion fc (1) and the runner's gather of three aux hidden states instead of one
#: (`torch.cat([h[token_indices] for h in aux_hidden_states], dim=-1)` vs `hidden_states[token_indices]`:
#: 2 more gathers and the cat, 3), exposed like the rest of that preparation
EAGLE3_MAP_OPS, EAGLE3_FUSION_OPS = 4, 4
#: vLLM 0.8 (before torch.compile / CUDA graphs for the EAGLE head, vllm#17211, #17504): a pass runs its
#: layer eagerly — embedding, cat, fc (3), input norm, qkv, rotary, KV write, attention, o_proj, fused
#: add + norm, gate_up, SiLU·mul, down, final norm (11) — instead of two graph pieces and the attention (3)
VLLM_V08_EAGER_LAYER_OPS = 11
#: a later vLLM 0.8 pass, read in the 0.8.4 wheel (`eagle.py` propose loop, `llama_eagle.py`): positions
#: += 1, seq_lens += 1, `//`, gather, `*`, `%`, `+` for the slot mapping (7, no clamping and no graph
#: buffers yet), the eager head's embedding, cat, fc (3) and layer with its residual add (11), the LM head
#: and the greedy argmax (2): 23 (session 3 took 0.9's 22 with the graph pieces swapped for the eager
#: layer: 33)
VLLM_V08_PASS_OPS = 7 + 3 + VLLM_V08_EAGER_LAYER_OPS + 2
#: its first pass after propose's syncs: the eager head (14), the last-position gather, LM head, argmax and
#: the loop's position gather (4)
VLLM_V08_FIRST_OPS = 3 + VLLM_V08_EAGER_LAYER_OPS + 4
#: versions whose first draft pass runs over the accepted positions only (the unpadded `prepare_inputs`:
#: `num_tokens = num_scheduled_tokens - sum(num_rejected_tokens)`, v0.9.2 `gpu_model_runner.py`), not over
#: all R·(1 + K) verified ones (0.11+'s padded batch keeps the rejected as padding)
ACCEPTED_FIRST = frozenset({"0.8", "0.9", "0.10"})
#: SpecDecode-Bench's per-step host overhead, vLLM v0.10.1, H100 (seconds; module docstring)
VLLM_V0_HOST_STEP_S = 1.20683946e-03


def engine_versions(vllm, sglang) -> dict:
    """{version name: ServingEngine} from the two base rows (`spec_engine.ENGINES["vllm"]`, `["sglang"]`)."""
    v0 = replace(
        vllm, name="vllm-0.10", first_eager=True, full_vocab_map=True,
        extend_ops=VLLM_V0_FIRST_OPS,
        pass_ops=VLLM_V0_PASS_OPS, prep_ops=VLLM_V0_PREP_OPS, reduced_vocab_ops=EAGLE3_MAP_OPS,
        fusion_ops=EAGLE3_FUSION_OPS, nospec_host_s=VLLM_V0_HOST_STEP_S, version="0.10",
        source="vLLM V1 0.9/0.10: no async scheduling, sync after sampling, PIECEWISE draft graphs "
               "with eager ops around each pass (eagle.py propose)",
    )  # fmt: skip
    return {
        "vllm-0.8": replace(
            v0, name="vllm-0.8", version="0.8", pass_ops=VLLM_V08_PASS_OPS,
            layer_ops=VLLM_V08_EAGER_LAYER_OPS,
            extend_ops=VLLM_V08_FIRST_OPS,
            source="vLLM V1 0.8: the EAGLE head eager (torch.compile and CUDA graphs came with vllm#17211 / "
                   "#17504, 0.9), no async scheduling, sync after sampling",
        ),  # fmt: skip
        "vllm-0.9": replace(v0, name="vllm-0.9", version="0.9"),
        "vllm-0.10": v0,
        "vllm-0.11": replace(
            v0, name="vllm-0.11", version="0.11",
            source="vLLM 0.11: padded drafter batch, but the runner's `seq_lens.max()` check syncs before "
                   "propose: the draft phase starts on an empty queue, as 0.10",
        ),  # fmt: skip
        "vllm-0.12": replace(
            vllm, name="vllm-0.12", nospec_host_s=VLLM_V0_HOST_STEP_S, version="0.12", full_vocab_map=True,
            source="vLLM 0.12-0.13: padded drafter batch, no sync before propose (its launches overlap "
                   "the target forward), no async scheduling by default (step host exposed)",
        ),  # fmt: skip
        "vllm-0.15": replace(vllm, name="vllm-0.15", version="0.15", full_vocab_map=True),
        "sglang-0.4": replace(sglang, name="sglang-0.4", verify_kernel="flashinfer-mask", version="0.4"),
        "sglang-0.5": replace(
            sglang,
            name="sglang-0.5",
            first_eager=False,
            graph_max_bs=160,
            version="0.5",
            source="SGLang 0.5.x EAGLE worker: overlap off, draft extend in a CUDA graph (sglang#6606), "
            "chains verified with FlashAttention-3",
        ),  # fmt: skip
        "trtllm": replace(
            vllm,
            name="trtllm",
            version="trtllm",
            source="TensorRT-LLM: drafter in the engine's CUDA graph, overlap scheduler",
        ),
    }


def engine_name(engine: str, version: str) -> str:
    """The `specsched.spec_versions` row of an engine and its published version ("0.4.4" → sglang-0.4; a
    leading "~" marks a version inferred from the measurement's date, read the same)."""
    if engine == "trtllm":
        return "trtllm"
    try:
        major, minor = (int(p) for p in version.strip().lstrip("~v").split(".")[:2])
    except ValueError:
        return "vllm-0.15" if engine == "vllm" else "sglang-0.5"
    if engine == "vllm":
        if (major, minor) < (0, 9):
            return "vllm-0.8"
        if (major, minor) < (0, 10):
            return "vllm-0.9"
        if (major, minor) < (0, 12):
            return "vllm-0.10" if (major, minor) < (0, 11) else "vllm-0.11"
        return "vllm-0.12" if (major, minor) < (0, 14) else "vllm-0.15"
    return "sglang-0.4" if (major, minor) < (0, 5) else "sglang-0.5"
