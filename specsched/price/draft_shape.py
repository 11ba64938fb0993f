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
                 + 2 · layers · link_latency  (tp > 1)
    draft step   = γ · pass(R) (autoregressive) | pass(R · γ) (parallel) + DSpark: γ · c0 (Markov head)
                   with an engine (`specsched.spec_engine`, autoregressive): first(R·(1 + γ)) + (γ − 1) ·
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
eta_*) are the GPU's no-speculation calibration (`sim.vllm_deploy.shipped_knobs`): nothing here is
fitted to speculative runs. Not modelled: tree drafting, the draft-vocabulary map lookup.

May import: numpy, the standard library, `specsched.cost`, `specsched.draft_cost`,
`specsched.catalog`, `specsched.errors`, `specsched.spec_engine`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsched.cost import CostTable
from specsched.draft_cost import DraftCost
from specsched.errors import InputError
from specsched.price import GPU as CatalogGPU
from specsched.price import ModelShape as CatalogModel
from specsched.price.spec_engine import (
    EAGER_OP_S,
    draft_pass_seconds,
    first_pass_seconds,
    get_engine,
    host_request_seconds,
    host_step_seconds,
)

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
    )  # fmt: skip


def pass_seconds(
    shape: DrafterShape, gpu: CatalogGPU, knobs, m, *, tp: int = 1, bpp: float = 2.0, head_m=None
) -> np.ndarray:
    """float64 seconds of one draft pass over `m` tokens (array ≥ 0) on one GPU of a `tp` replica
    (module docstring), its LM head and sampling over `head_m` of them (None: all m; EAGLE's first pass
    runs its layers over every verified position, its head over the positions it samples from); `knobs`
    has step_s, c0, eta_bw, eta_f, link_latency (None: the GPU's)."""
    m = np.asarray(m, dtype=np.float64)
    hm = m if head_m is None else np.asarray(head_m, dtype=np.float64)
    bw, flops = knobs.eta_bw * gpu.gpu.hbm_bw, knobs.eta_f * gpu.gpu.flops
    weights = shape.params * bpp / tp / bw
    body = shape.params - shape.head_params
    compute = 2.0 * (body * m + shape.head_params * hm) / tp / flops
    logits = 2.0 * hm * shape.vocab * LOGIT_BYTES / tp / bw
    fixed = knobs.step_s + (shape.layers + 1) * knobs.c0
    if tp > 1:
        link = gpu.link_latency if knobs.link_latency is None else knobs.link_latency
        fixed += 2 * shape.layers * link
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
    op_s: float = EAGER_OP_S,
    emitted: float | None = None,
    host_scale: float = 1.0,
) -> tuple[DraftCost, float]:
    """(the DraftCost of `shape` drafting γ with the pass table over 1..max_tokens tokens, the drafter's
    seconds per KV token held per step). `engine` (`specsched.spec_engine.ENGINES`; None: every pass over
    the drafting requests, no engine terms): an autoregressive drafter's first pass runs over the verified
    positions as that engine runs it, plus the host work its step exposes (`op_s` per eager op; `emitted`:
    tokens a drafting request emits a step, None: the bound 1 + γ; `host_scale`: a factor on the measured
    per-request host loops)."""
    m = np.arange(1, max(int(max_tokens), 1) + 1, dtype=np.int64)
    eng = get_engine(engine) if engine is not None and shape.kind == "autoregressive" else None
    one = pass_seconds(shape, gpu, knobs, m, tp=tp, bpp=bpp)
    if eng is not None:
        one = draft_pass_seconds(eng, m, one, op_s=op_s)
    table = CostTable.from_points(m, one, mode="linear", layers=shape.layers, name=f"draft:{shape.name}")
    step = knobs.c0 + (gamma * knobs.c0 if shape.markov else 0.0)
    first, per_request = None, 0.0
    if eng is not None:
        top = np.arange(1, (max(int(max_tokens), 1) // max(gamma, 1) + 1) * (1 + gamma) + 1, dtype=np.int64)
        gpu_s = pass_seconds(shape, gpu, knobs, top, tp=tp, bpp=bpp, head_m=np.ceil(top / (1 + gamma)))
        first = CostTable.from_points(top, first_pass_seconds(eng, gpu_s, op_s=op_s), mode="linear",
                                      layers=shape.layers, name=f"draft:{shape.name}:first")  # fmt: skip
        step += host_step_seconds(eng, op_s=op_s)
        per_request = host_request_seconds(eng, 1 + gamma if emitted is None else emitted, scale=host_scale)
    cost = DraftCost(
        shape.kind,
        1.0,
        own=table,
        position_s=verify_position_seconds(target, gpu, knobs, tp=tp),
        step_s=step,
        first=first,
        request_s=per_request,
    )
    passes = gamma if shape.kind == "autoregressive" else 1
    kv = passes * shape.kv_bytes_per_token / tp / (knobs.eta_kv * gpu.gpu.hbm_bw)
    return cost, float(kv)
