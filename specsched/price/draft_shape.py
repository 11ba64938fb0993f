"""A drafter priced from its own shape: presets (EAGLE-1, EAGLE-3, MTP, DFlash, DSpark) and the draft pass's
roofline, on the same calibrated knobs as the target's steps.

Role: `DrafterShape` (layers, hidden, MLP width, heads / KV heads, input fusion width, draft vocabulary and
whether the LM head is its own or the target's) and `drafter_shape(preset, target)` resolve a preset
against the target's catalogue shape; `pass_seconds` prices one draft pass over m tokens; `own_draft_cost`
builds the `specsched.DraftCost` a run prices its draft passes and verification with:

    one pass(m)  = step_s + (layers + 1) · c0                 per-pass fixed work: the decoder layers and
                                                              one kernel group for fc + LM head + sampling
                 + max(W_draft / (eta_bw · BW), 2 · W_draft · m / (eta_f · F))   weights or compute
                 + 2 · m · V_draft · 4 / (eta_bw · BW)        fp32 draft logits written and read (sampling)
                 + (2 · layers + 1) · link_latency  (tp > 1: two all-reduces a layer and the token
                                                              embedding's, VocabParallelEmbedding)
    draft step   = γ · pass(R) (autoregressive) | pass(R · γ) (parallel) + DSpark: γ · c0 (Markov head)
                   with an engine (`specsched.price.spec_engine`, autoregressive): first(R·(1 + γ)) + (γ − 1)
                   ·
                   pass(R) + the host seconds the engine's step exposes (per step + per drafting request,
                   with E tokens emitted a request); first = the pass's layers over every verified
                   position, its head over R (eager in SGLang v0.4: max(GPU, ops × op_s)); SGLang v0.4's
                   later passes are eager above 32 requests
    verification = the target's own step at R · (1 + γ) tokens (its roofline: not free past the knee)
                 + c0 + 3 · (drafted positions) · V_target · 4 / (eta_bw · BW)    rejection sampling over
                                                              the target's fp32 probabilities
    KV           = drafter KV bytes per context token (× γ passes for autoregressive) / (eta_kv · BW)

W_draft = layers · (attention + 3 · hidden · intermediate) + fc_in · hidden² (feature fusion) + head
(V_draft · hidden: its own head, or the target's shared head, read either way). The knobs (step_s, c0,
eta_*) are the GPU's no-speculation calibration (`specsched.price.vllm.shipped_knobs`): nothing here is
fitted to speculative runs. Not modelled: tree drafting, the draft-vocabulary map lookup.

May import: numpy, the standard library, `specsched.cost`, `specsched.draft_cost`,
`specsched.price`, `specsched.io.errors`, `specsched.spec_knobs`, `specsched.spec_versions`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from specsched.cost import CostTable
from specsched.draft_cost import DraftCost
from specsched.io.errors import InputError
from specsched.price import GPU as CatalogGPU
from specsched.price import ModelShape as CatalogModel
from specsched.price.spec_engine import (
    draft_pass_seconds,
    first_pass_seconds,
    get_engine,
    host_request_seconds,
    host_step_seconds,
)
from specsched.spec_knobs import SpecKnobs, shipped_spec_knobs
from specsched.spec_versions import ACCEPTED_FIRST

#: fp32 logits / probabilities
LOGIT_BYTES = 4


@dataclass(frozen=True)
class DrafterShape:
    """One drafter's shape. kind: "autoregressive" (γ sequential passes over the drafting requests) or
    "parallel" (one pass over every drafted position); fc_in: the fusion layer's input width in hiddens
    (0: none); attn_in: the first layer's attention input in hiddens (EAGLE-3: 2, embedding ‖ feature);
    vocab: draft vocabulary; own_head: its own LM head (else the target's, shared); markov: DSpark's
    sequential sampling head (γ tiny steps)."""

    name: str
    kind: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    own_head: bool
    fc_in: int = 0
    attn_in: int = 1
    markov: bool = False
    source: str = ""
    fc_replicated: bool = False

    @property
    def fuses_once(self) -> bool:
        """The fusion fc runs in the first pass only: EAGLE-3's fc maps the target's three concatenated
        layers (3h) to h once (vLLM `eagle.py` propose: `combine_hidden_states` before the pass loop; SGLang
        `llama_eagle3.py`: fc applied when the input is wider than h); later passes feed the draft's own
        h-wide state. EAGLE-1 / MTP fuse embedding ‖ feature (2h) in every pass."""
        return self.kind == "autoregressive" and self.fc_in >= 3

    @property
    def fc_params(self) -> float:
        return float(self.fc_in * self.hidden**2)

    def __post_init__(self) -> None:
        if self.kind not in ("autoregressive", "parallel"):
            raise ValueError(f"drafter shape {self.name}: kind must be autoregressive or parallel")
        for key in ("layers", "hidden", "intermediate", "heads", "kv_heads", "head_dim", "vocab", "attn_in"):
            if not getattr(self, key) >= 1:
                raise ValueError(f"drafter shape {self.name}: {key} must be ≥ 1")

    @property
    def layer_params(self) -> float:
        """Parameters of one decoder layer (attention projections + gated MLP; norms are negligible)."""
        q_in = self.attn_in * self.hidden
        attn = q_in * self.heads * self.head_dim + 2 * q_in * self.kv_heads * self.head_dim
        attn += self.heads * self.head_dim * self.hidden
        return float(attn + 3 * self.hidden * self.intermediate)

    @property
    def head_params(self) -> float:
        return float(self.vocab * self.hidden)

    @property
    def params(self) -> float:
        """Weights read per pass: the layers, the fusion fc and the LM head (own or shared)."""
        return self.layers * self.layer_params + self.fc_in * self.hidden**2 + self.head_params

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * 2


# name -> (kind, layers, fc_in, attn_in, draft vocab (None: the target's, shared head), markov, source)
PRESETS: dict[str, tuple] = {
    "eagle1": ("autoregressive", 1, 2, 1, None, False,
               "EAGLE (Li et al. 2024, arXiv:2401.15077; github.com/SafeAILab/EAGLE): one decoder layer "
               "over fc(embedding ‖ feature) (2h→h), the target's LM head"),
    "eagle3": ("autoregressive", 1, 3, 2, 32000, False,
               "EAGLE-3 (Li et al. 2025, arXiv:2503.01840; "
               "huggingface.co/yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json: 1 layer, hidden 4096, "
               "draft_vocab_size 32000): fc fuses 3 target layers (3h→h), "
               "attention over embedding ‖ fused feature (2h in), its own 32k-token LM head"),
    "mtp": ("autoregressive", 1, 2, 1, None, False,
            "DeepSeek-V3 multi-token prediction (arXiv:2412.19437 §2.2): projection M (2h→h) of "
            "norm(h) ‖ norm(embedding), one transformer block, embedding and output head shared with the "
            "target; here MoE-free (a dense block of the target's width)"),
    "dflash": ("parallel", 5, 5, 1, None, False,
               "DFlash block-diffusion drafter (github.com/deepseek-ai/DeepSpec config/dflash; "
               "../shared/research/dspark.md §1.1): 5 target-shaped layers over anchor + mask tokens, "
               "5 fused target layers (5h→h), the target's embedding and LM head (frozen)"),
    "dspark": ("parallel", 5, 5, 1, None, True,
               "DSpark (github.com/deepseek-ai/DeepSpec config/dspark; ../shared/research/dspark.md §1): "
               "DFlash's backbone plus a Markov head sampled sequentially over the block"),
}  # fmt: skip


#: presets whose fusion fc is one replicated linear under TP (every rank reads and computes it whole): vLLM
#: `llama_eagle.py` / `llama_eagle3.py` (`self.fc`: torch.nn.Linear in 2025, `ReplicatedLinear` later),
#: `deepseek_mtp.py` (`eh_proj`: nn.Linear); SGLang's `llama_eagle3.py` fc (torch.nn.Linear)
REPLICATED_FC = frozenset({"eagle1", "eagle3", "mtp"})


def drafter_shape(preset: str, target: CatalogModel, *, field: str = "drafter.model") -> DrafterShape:
    """`preset` resolved against the target's shape (hidden, MLP width, heads, head size and, for a
    shared head, vocabulary are the target's). InputError naming `field` for an unknown preset."""
    key = preset.lower() if isinstance(preset, str) else preset
    if key not in PRESETS:
        raise InputError(f"unknown drafter preset {preset!r} (presets: {', '.join(PRESETS)})", field=field)
    kind, layers, fc_in, attn_in, vocab, markov, source = PRESETS[key]
    own = vocab is not None
    return DrafterShape(
        key, kind, layers, target.hidden, target.intermediate, target.heads, target.kv_heads,
        target.head_dim, vocab if own else target.vocab, own, fc_in, attn_in, markov, source,
        fc_replicated=key in REPLICATED_FC,
    )  # fmt: skip


def pass_seconds(
    shape: DrafterShape, gpu: CatalogGPU, knobs, m, *, tp: int = 1, bpp: float = 2.0, head_m=None,
    head_gather: int = 0,
    logit_vocab: int | None = None,
    fusion: bool = True,
) -> np.ndarray:
    """float64 seconds of one draft pass over `m` tokens (array ≥ 0) on one GPU of a `tp` replica
    (module docstring), its LM head and sampling over `head_m` of them (None: all m; EAGLE's first pass
    runs its layers over every verified position, its head over the positions it samples from); `knobs`
    has step_s, c0, eta_bw, eta_f, link_latency (None: the GPU's); head_gather: collectives of a
    vocab-parallel LM head under TP (the engine's; 0 without an engine); logit_vocab: the vocabulary the
    sampling reads (None: the drafter's; a reduced head scattered into the target's: the target's); fusion:
    whether this pass runs the fusion fc (False: a later pass of a drafter that fuses once, `fuses_once`).
    A replicated fc (`fc_replicated`) is read and computed whole on every rank."""
    m = np.asarray(m, dtype=np.float64)
    hm = m if head_m is None else np.asarray(head_m, dtype=np.float64)
    bw, flops = knobs.eta_bw * gpu.gpu.hbm_bw, knobs.eta_f * gpu.gpu.flops
    fc = shape.fc_params if fusion or not shape.fuses_once else 0.0
    fc_rank = fc if shape.fc_replicated else fc / tp  # parameters of the fc one rank holds
    sharded = shape.params - shape.fc_params - shape.head_params  # the decoder layers
    weights = ((sharded + shape.head_params) / tp + fc_rank) * bpp / bw
    compute = 2.0 * ((sharded / tp + fc_rank) * m + shape.head_params * hm / tp) / flops
    logits = 2.0 * hm * (logit_vocab or shape.vocab) * LOGIT_BYTES / tp / bw
    fixed = knobs.step_s + (shape.layers + 1) * knobs.c0
    if tp > 1:
        link = gpu.link_latency if knobs.link_latency is None else knobs.link_latency
        # two all-reduces a layer, the token embedding's (VocabParallelEmbedding.forward looks up its
        # vocabulary shard and all-reduces: vLLM 0.9.2 vocab_parallel_embedding.py; a shared embedding is
        # the target's module, the same collective) and the LM head's gather (the engine's)
        fixed += (2 * shape.layers + 1 + head_gather) * link
    return fixed + np.maximum(weights, compute) + logits


def verify_position_seconds(target: CatalogModel, gpu: CatalogGPU, knobs, *, tp: int = 1) -> float:
    """Rejection sampling's seconds per drafted position: three passes (softmax, compare, residual) over
    the target's fp32 probabilities of that position."""
    return 3.0 * target.vocab * LOGIT_BYTES / tp / (knobs.eta_bw * gpu.gpu.hbm_bw)


def own_draft_cost(
    shape: DrafterShape,
    target: CatalogModel,
    gpu: CatalogGPU,
    knobs,
    gamma: int,
    max_tokens: int,
    *,
    tp: int = 1,
    bpp: float = 2.0,
    engine=None,
    op_s: float | None = None,
    emitted: float | None = None,
    host_scale: float | None = None,
    spec_knobs: SpecKnobs | None = None,
) -> tuple[DraftCost, float]:
    """(the DraftCost of `shape` drafting γ with the pass table over 1..max_tokens tokens, the drafter's
    seconds per KV token held per step). `engine` (`specsched.price.spec_engine.ENGINES`; None: every pass
    over
    the drafting requests, no engine terms): an autoregressive drafter's first pass runs over the verified
    positions as that engine runs it; every drafter (parallel ones too) pays the host work its step
    exposes (`op_s` per eager op; `emitted`: tokens a drafting request emits a step, None: the bound 1 + γ —
    also the positions vLLM ≤ 0.10's first pass runs its layers over, `spec_versions.ACCEPTED_FIRST`;
    `host_scale`: a factor on the measured per-request host loops; `spec_knobs`: the fitted speculative
    knobs, None: the shipped ones — op_s and host_scale given here win). The engine's version terms
    (`specsched.spec_versions`): passes no faster than their host launches, the first pass's extra
    launches, the per-step proposer / rejection launches, the LM head's gather under TP, and the verify
    kernel's KV read (`DraftCost.verify_kv_s`, not in the returned KV seconds: those are the drafter's)."""
    sk = shipped_spec_knobs() if spec_knobs is None else spec_knobs
    op_s = sk.op_s if op_s is None else op_s
    host_scale = sk.host_scale if host_scale is None else host_scale
    m = np.arange(1, max(int(max_tokens), 1) + 1, dtype=np.int64)
    eng = get_engine(engine) if engine is not None else None
    chain = eng is not None and shape.kind == "autoregressive"  # a first pass over the verified positions
    gather = eng.head_gather if eng is not None else 0
    scatter = eng is not None and eng.full_vocab_map and shape.own_head and shape.vocab < target.vocab
    lv = target.vocab if scatter else None
    if eng is not None:
        eng = version_ops(eng, shape, target)
    one = _pass_seconds(shape, gpu, knobs, eng, m, chain, tp=tp, bpp=bpp, gather=gather, lv=lv, op_s=op_s)
    table = CostTable.from_points(m, one, mode="linear", layers=shape.layers, name=f"draft:{shape.name}")
    step = knobs.c0 + (gamma * knobs.c0 if shape.markov else 0.0)
    first, per_request, host = None, 0.0, 0.0
    if chain:
        layer_share = 1.0  # the first pass's layer tokens per verified position
        if eng.version in ACCEPTED_FIRST and emitted is not None:
            layer_share = min(float(emitted), 1.0 + gamma) / (1.0 + gamma)
        first = _first_table(shape, gpu, knobs, eng, gamma, max_tokens, tp=tp, bpp=bpp, gather=gather, lv=lv,
                             op_s=op_s, share=layer_share)  # fmt: skip
    if eng is not None:  # per step, whatever the drafter: proposer / rejection launches, exposed host loops
        host = host_step_seconds(eng, op_s=op_s) + eng.prep_ops * op_s
        step += host
        per_request = host_request_seconds(eng, 1 + gamma if emitted is None else emitted, scale=host_scale)
    cost = DraftCost(
        shape.kind,
        1.0,
        own=table,
        position_s=verify_position_seconds(target, gpu, knobs, tp=tp),
        step_s=step,
        first=first,
        request_s=per_request,
        host_s=host,
        gamma=gamma if eng is not None else 0,
        verify_kv_s=verify_kv_seconds(eng, target, gpu, knobs, sk, tp=tp) if eng is not None else 0.0,
    )
    passes = gamma if shape.kind == "autoregressive" else 1
    kv = passes * shape.kv_bytes_per_token / tp / (knobs.eta_kv * gpu.gpu.hbm_bw)
    return cost, float(kv)


def _pass_seconds(shape, gpu, knobs, eng, m, chain: bool, *, tp, bpp, gather, lv, op_s) -> np.ndarray:
    """One later pass over m tokens as `eng` runs it (None: the roofline alone): eager above the captured
    batches (chains), and no faster than its host launches when the phase starts on an empty queue."""
    one = pass_seconds(shape, gpu, knobs, m, tp=tp, bpp=bpp, head_gather=gather, logit_vocab=lv,
                       fusion=not chain)  # a later pass of a chain: EAGLE-3's fc ran in the first
    if eng is None:
        return one
    if chain:
        one = draft_pass_seconds(eng, m, one, op_s=op_s)
    return np.maximum(one, eng.pass_ops * op_s) if eng.pass_ops else one


def _first_table(shape, gpu, knobs, eng, gamma, max_tokens, *, tp, bpp, gather, lv, op_s, share=1.0):
    """The first draft pass over the verified positions (indexed by R·(1 + γ), its head over R) as `eng`
    runs it, tabulated over whole steps of up to max_tokens / γ drafting requests; share: the fraction of
    those positions its layers run over (vLLM ≤ 0.10: the accepted ones, E / (1 + γ))."""
    top = np.arange(1, (max(int(max_tokens), 1) // max(gamma, 1) + 1) * (1 + gamma) + 1, dtype=np.int64)
    gpu_s = pass_seconds(shape, gpu, knobs, top * share, tp=tp, bpp=bpp, head_m=np.ceil(top / (1 + gamma)),
                         head_gather=gather, logit_vocab=lv)  # fmt: skip
    return CostTable.from_points(top, first_pass_seconds(eng, gpu_s, op_s=op_s), mode="linear",
                                 layers=shape.layers, name=f"draft:{shape.name}:first")  # fmt: skip


def version_ops(eng, shape: DrafterShape, target: CatalogModel):
    """`eng` with the launches this drafter adds where the version issues its passes from the host: a
    reduced draft vocabulary's id map on every pass, a graph piece + attention launch for every layer past
    the first (a draft LM's), and EAGLE-3's three-state fusion in the exposed per-step preparation (vLLM
    0.9/0.10 gather the three aux states and run the fusion fc before propose's syncs,
    `specsched.spec_versions`)."""
    if not eng.pass_ops and not eng.first_eager:
        return eng
    extra = eng.reduced_vocab_ops if shape.own_head and shape.vocab < target.vocab else 0
    fusion = eng.fusion_ops if shape.fuses_once else 0  # EAGLE-3 (a parallel drafter has no propose syncs)
    # PIECEWISE graphs split at every attention: a further layer adds a graph piece and an attention launch
    # (an eager head: its layer's launches, `layer_ops`)
    extra += eng.layer_ops * (shape.layers - 1)
    if not eng.pass_ops:
        return eng
    return replace(eng, pass_ops=eng.pass_ops + extra, extend_ops=eng.extend_ops + extra,
                   prep_ops=eng.prep_ops + fusion)  # fmt: skip


def verify_kv_seconds(
    eng, target: CatalogModel, gpu: CatalogGPU, knobs, sk: SpecKnobs, *, tp: int = 1
) -> float:
    """Seconds per KV token held that the verify pass's attention kernel adds beyond the calibrated decode
    path's KV read: FlashInfer's custom-mask prefill kernel reads the target's KV at eta_kv · mask_eff."""
    if eng.verify_kernel != "flashinfer-mask" or sk.mask_eff >= 1.0:
        return 0.0
    per_token = target.kv_bytes_per_token / tp / (knobs.eta_kv * gpu.gpu.hbm_bw)
    return float(per_token * (1.0 / sk.mask_eff - 1.0))
