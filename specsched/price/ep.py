"""One step of a DP-attention + expert-parallel group (DeepSeek / SGLang style), priced part by part.

Role: the step-time model of a decode (or prefill) pool that is ONE expert-parallel group of G GPUs with D
data-parallel attention ranks (each rank G/D GPUs, tensor-parallel inside for attention). Every rank runs
attention over its own requests; all ranks then run the MoE layers together on the whole group's tokens,
which reach the experts through an all-to-all dispatch and come back through a combine
(`specsched.comm`). Ranks step in lockstep (the all-to-all is a barrier), so the slowest rank sets the
pace: `attention_imbalance` ≥ 1 is its attention work over the mean rank's, `expert_imbalance` ≥ 1 the
busiest GPU's routed tokens over the mean (DeepSeek's EPLB keeps it near 1; both are stated factors, 1.0
= perfectly balanced, not fitted).

Per GPU, one step of T tokens per rank (the group: D·T tokens), C KV tokens read per rank and A attention
FLOPs per rank, with m micro-batches:

    attention = attention_imbalance · max(C · kv_bytes / (η_bw·BW), A / (tp_a · η_attn · F_bf16))
    dense     = Σ over micro-batches max(dense weights / tp_a / (η_bw·BW), 2·P_dense·T/(m·tp_a) / (η_f·F))
    experts   = Σ over micro-batches max(touched hosted experts' weights / (η_bw·BW),
                                         2·P_expert·routed tokens/(m) / (η_f·F))
    comm      = Σ over MoE layers and micro-batches (dispatch + combine of T/m tokens)
    step      = Σ over layers overlapped(compute_l, comm_l, m) + pipeline_fill + c0 · layers · m

where routed tokens per GPU = D·T·top_k / G · expert_imbalance, F is the FP8 peak for FP8 weights, and
`overlapped` (specsched.comm) is the sum with one micro-batch and the max with two (plus one fill
per step). The network share of the all-to-all: every remote expert in low-latency mode (decode), once per
remote node with NVLink forwarding (prefill; `specsched.comm.remote_nodes`). KV bytes are NOT
divided by tp_a: MLA's latent KV is read whole by every tensor-parallel attention rank.

Models, GPUs and links are the catalogue's (`specsched.price`); a model's attention arithmetic is its
row's `attention` facts (`specsched.price.models.Attention`, `ep_models()` lists the models that have
them); η_bw, η_f, η_attn and c0 default to the one `Knobs` (`specsched.price.knobs`).

May import: numpy, the standard library, `specsched.comm`, `specsched.price`, `specsched.cost` (in
`group_table`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from specsched.comm import AllToAll, overlapped, pipeline_fill, remote_nodes
from specsched.price.gpus import GPU, Link, get_gpu, get_link
from specsched.price.knobs import DEFAULTS, Knobs
from specsched.price.models import MODELS, Attention, ModelShape, get_model


def ep_models() -> tuple[str, ...]:
    """The catalogue models an EP group can price: those with attention facts."""
    return tuple(name for name, m in MODELS.items() if m.attention is not None)


@dataclass(frozen=True)
class Bill:
    """One step's seconds, part by part (per GPU of the slowest rank). `total` is what the step takes;
    `hidden` is the communication the micro-batch overlap hid (comm − what it added)."""

    attention: float
    dense: float
    experts: float
    dispatch: float
    combine: float
    overhead: float
    hidden: float
    total: float

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class EPGroup:
    """A DP-attention + EP group: `gpus` GPUs (G), `attention_ranks` DP ranks (D, dividing G).

    knobs: the one `Knobs` (defaults: stated, none fitted here) — eta_bw / eta_f / eta_attn, achieved
    fractions of HBM bandwidth, dense tensor peak for the linear layers and for attention; c0, fixed
    seconds per layer per micro-batch (launches, norms, routing, small ops); micro_batches — 1 or 2;
    low_latency — DeepEP's pure-RDMA decode kernels (every destination over `inter`) instead of the
    NVLink-forwarding normal kernels (a share gpus_per_node/G of destinations over `intra`).
    """

    model: ModelShape
    gpu: GPU
    gpus: int
    attention_ranks: int
    gpus_per_node: int = 8
    redundant_experts: int = 0
    inter: Link = field(default_factory=lambda: get_link("ib-400g"))
    intra: Link = field(default_factory=lambda: get_link("nvlink-h100"))
    low_latency: bool = True
    micro_batches: int = 2
    expert_imbalance: float = 1.0
    attention_imbalance: float = 1.0
    knobs: Knobs = DEFAULTS
    attention: Attention | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", get_model(self.model))
        object.__setattr__(self, "gpu", get_gpu(self.gpu))
        object.__setattr__(self, "inter", get_link(self.inter))
        object.__setattr__(self, "intra", get_link(self.intra))
        if not self.model.is_moe:
            raise ValueError(f"EP group: {self.model.name} is dense; expert parallelism needs an MoE model")
        if self.attention is None:
            if self.model.attention is None:
                raise ValueError(f"EP group: no attention facts for {self.model.name}; pass `attention`")
            object.__setattr__(self, "attention", self.model.attention)
        if self.gpus < 1 or self.attention_ranks < 1 or self.gpus % self.attention_ranks:
            raise ValueError(
                f"EP group: attention_ranks ({self.attention_ranks}) must divide gpus ({self.gpus})"
            )
        if self.micro_batches not in (1, 2):
            raise ValueError(f"EP group: micro_batches must be 1 or 2, got {self.micro_batches!r}")
        for name in ("expert_imbalance", "attention_imbalance"):
            if not getattr(self, name) >= 1:
                raise ValueError(f"EP group: {name} must be ≥ 1 (max over mean), got {getattr(self, name)!r}")
        if self.redundant_experts < 0 or self.gpus_per_node < 1:
            raise ValueError("EP group: redundant_experts ≥ 0 and gpus_per_node ≥ 1 required")

    @property
    def tp_attention(self) -> int:
        return self.gpus // self.attention_ranks

    @property
    def experts_per_gpu(self) -> float:
        """Routed experts each GPU hosts (with the redundant copies): DeepSeek decode EP144: 288/144 = 2."""
        return (self.model.experts + self.redundant_experts) / self.gpus

    def _peak(self) -> float:
        return self.gpu.flops * (2.0 if self.model.bytes_per_param <= 1.0 else 1.0)

    def all_to_all(self) -> AllToAll:
        md = self.model
        if self.gpus <= self.gpus_per_node:  # one node: NVLink only
            return AllToAll(md.d_model, md.top_k, self.inter, self.intra, 1.0)
        if self.low_latency:
            return AllToAll(md.d_model, md.top_k, self.inter, self.intra, 0.0)
        nodes = -(-self.gpus // self.gpus_per_node)
        copies = remote_nodes(nodes, md.top_k)
        return AllToAll(md.d_model, md.top_k, self.inter, self.intra, 1.0 / nodes, remote_copies=copies)

    def bill(self, tokens: float, kv_tokens: float, attn_flops: float) -> Bill:
        """The step of `tokens` query tokens per rank, `kv_tokens` KV tokens read per rank and `attn_flops`
        attention FLOPs per rank (all layers), per GPU (module docstring)."""
        k, m, tp = self.knobs, self.micro_batches, self.tp_attention
        bw = k.eta_bw * self.gpu.hbm_bw
        md, peak = self.model, self._peak()
        bpp = md.bytes_per_param
        attention = self.attention_imbalance * max(
            kv_tokens * md.kv_bytes_per_token / bw, attn_flops / (tp * k.eta_attn * self.gpu.flops)
        )
        dense = m * max(
            md.dense_params * bpp / tp / bw, 2.0 * md.dense_params * tokens / (m * tp) / (k.eta_f * peak)
        )
        group_tokens = tokens * self.attention_ranks
        per_mb = group_tokens / m
        touched = 1.0 - (1.0 - md.top_k / md.experts) ** per_mb if per_mb > 0 else 0.0
        expert_bytes = self.experts_per_gpu * touched * md.expert_params * md.moe_layers * bpp
        routed = group_tokens * md.top_k / self.gpus * self.expert_imbalance
        experts = m * max(
            expert_bytes / bw, 2.0 * md.expert_params * md.moe_layers * routed / m / (k.eta_f * peak)
        )
        d1, c1 = self.all_to_all().seconds(tokens / tp / m)
        dispatch, combine = d1 * m * md.moe_layers, c1 * m * md.moe_layers
        compute_l = (attention + dense + experts) / md.layers
        comm_l = (dispatch + combine) / md.moe_layers
        layers = md.moe_layers * overlapped(compute_l, comm_l, m) + (md.layers - md.moe_layers) * compute_l
        layers += pipeline_fill(compute_l, comm_l, m)
        overhead = k.c0 * md.layers * m
        total = layers + overhead
        hidden = attention + dense + experts + dispatch + combine - layers
        return Bill(attention, dense, experts, dispatch, combine, overhead, hidden, total)

    def decode_bill(self, requests: float, query_tokens: float, context: float) -> Bill:
        """A decode step of one rank: `requests` requests verifying `query_tokens` tokens each (1 + ℓ) over
        a mean `context` KV tokens (MLA absorbed: every query token reads the request's whole KV)."""
        pairs = requests * query_tokens * context
        flops = pairs * self.attention.decode_flops_per_pair * self.model.layers
        return self.bill(requests * query_tokens, requests * context, flops)

    def prefill_bill(self, tokens: float, cached: float, prompt: float) -> Bill:
        """A prefill step of one rank computing `tokens` prompt tokens (in chunks of requests of mean
        `prompt` tokens whose first `cached` are prefix-cache hits, so only prompt − cached are computed):
        causal attention of every computed token over its prefix."""
        computed = max(prompt - cached, 1e-9)
        pairs_per_computed = cached + (computed + 1.0) / 2.0
        flops = tokens * pairs_per_computed * self.attention.prefill_flops_per_pair * self.model.layers
        kv_read = tokens * pairs_per_computed / max(computed, 1.0)  # flash attention streams the prefix
        return self.bill(tokens, kv_read, flops)

    def draft_seconds(self, requests: float, context: float, draft_layers: int, passes: int) -> float:
        """An MTP-style drafter of `draft_layers` layers of the target's own shape, `passes` autoregressive
        passes over one token per request: each priced as draft_layers/layers of a one-token step, plus a
        read of the shared output head (`Attention.head_bytes`: a draft pass computes its logits too)."""
        if passes <= 0 or requests <= 0:
            return 0.0
        one = self.decode_bill(requests, 1.0, context).total
        head = self.attention.head_bytes / (self.knobs.eta_bw * self.gpu.hbm_bw)
        return passes * (one * draft_layers / self.model.layers + head)


def group_table(
    group: EPGroup,
    max_tokens: int,
    *,
    context: float,
    query_tokens: float,
    ranks: int | None = None,
    step_overhead: float = 0.0,
    slowdown: float = 1.0,
):
    """A `CostTable` for the simulator: one step of `ranks` attention ranks planned and batched together
    (None: all D of the group; 1: one rank), B = their tokens, each carrying B/ranks — and every other rank
    of the group as many (the ranks step in lockstep), every request at `context` KV tokens.

    A table is indexed by tokens only, so latency(B) is the bill of B/D tokens from B/(D·query_tokens)
    requests at `context`: the attention's FLOPs follow the query tokens (exact for any verify lengths)
    and its KV reads the requests (exact at `query_tokens` = 1 + ℓ per request). With DeepSeek-V3's MLA
    on Hopper the FLOPs dominate (module docstring), so verify tokens pay their attention.
    `step_overhead`: seconds added to every step (a stated or fitted per-step cost outside the bill);
    `slowdown` ≥ 1 multiplies the bill (a stated or fitted efficiency shortfall of the whole step).
    """
    from specsched.cost import CostTable  # cost imports the roofline; kept local to stay a leaf module

    if max_tokens < 1 or context < 0 or query_tokens < 1 or step_overhead < 0 or not slowdown > 0:
        raise ValueError(
            "group table: max_tokens, query_tokens ≥ 1; context, step_overhead ≥ 0; slowdown > 0"
        )
    d = group.attention_ranks if ranks is None else ranks
    if not 1 <= d <= group.attention_ranks:
        raise ValueError(f"group table: ranks must be in 1..{group.attention_ranks}, got {ranks!r}")
    dense = np.arange(1, min(max_tokens, 1024) + 1)
    sparse = np.geomspace(1024, max(max_tokens, 1024), 96).round()
    b = np.unique(np.concatenate([dense, sparse])).astype(np.int64)
    seconds = np.empty(b.size)
    for i, tokens in enumerate(b.tolist()):
        bill = group.decode_bill(tokens / d / query_tokens, query_tokens, context).total
        seconds[i] = bill * slowdown + step_overhead
    name = f"ep{group.gpus}-dp{group.attention_ranks}x{d}-{group.model.name}-{group.gpu.name}"
    return CostTable.from_points(b, seconds, mode="linear", layers=group.model.layers, name=name)


def prefill_table(group: EPGroup, max_tokens: int, *, prompt: float, cached: float, ranks: int | None = None):
    """A `CostTable` for a prefill pool that is one EP group: latency(B) = the prefill bill of B/ranks
    computed tokens per rank (every other rank as many) from prompts of mean `prompt` tokens whose first
    `cached` are prefix hits (their attention over the cached prefix is charged)."""
    from specsched.cost import CostTable

    if max_tokens < 1 or prompt < 1 or not 0 <= cached < prompt:
        raise ValueError("prefill table: max_tokens ≥ 1, prompt ≥ 1 and 0 ≤ cached < prompt required")
    d = group.attention_ranks if ranks is None else ranks
    if not 1 <= d <= group.attention_ranks:
        raise ValueError(f"prefill table: ranks must be in 1..{group.attention_ranks}, got {ranks!r}")
    b = np.unique(np.geomspace(1, max_tokens, 160).round()).astype(np.int64)
    seconds = np.array([group.prefill_bill(t / d, cached, prompt).total for t in b.tolist()])
    name = f"prefill-ep{group.gpus}-dp{group.attention_ranks}x{d}-{group.model.name}-{group.gpu.name}"
    return CostTable.from_points(b, seconds, mode="linear", layers=group.model.layers, name=name)
