"""Communication cost: link presets, MoE all-to-all (dispatch/combine) bytes and time, KV hand-off, overlap.

Role: the network half of a disaggregated, expert-parallel deployment. `specsched.price.ep` prices one
DP-attention + EP step with it; `sim.disagg` prices the prefill→decode KV hand-off with it.

A transfer of `n` bytes over a link costs `latency + n / bandwidth`; the links (`Link`, `LINKS`,
`get_link`) are the catalogue's one link table (`specsched.price.gpus`, with their sources).

Two-micro-batch overlap (DeepSeek's prefill "dual micro-batch", decode 5-stage pipeline; SGLang's
two-batch overlap): a step's batch is split in two halves; while one half communicates the other computes,
so per layer the step costs max(compute, communication) instead of their sum — but every weight is read
once per micro-batch, so memory-bound parts are paid twice (`specsched.price.ep` charges that).

May import: numpy, the standard library, `specsched.price.gpus`.
"""

from __future__ import annotations

from dataclasses import dataclass

from specsched.price.gpus import LINKS, Link, get_link

__all__ = [
    "LINKS", "AllToAll", "KVHandoff", "Link", "get_link", "overlapped", "pipeline_fill", "remote_nodes"
]  # fmt: skip


@dataclass(frozen=True)
class AllToAll:
    """One MoE layer's dispatch + combine for the tokens of one rank.

    Bytes per rank: dispatch sends each token to its top_k experts (`dispatch_bytes` per value: 1 = FP8,
    as DeepEP dispatches), combine brings each back (`combine_bytes`: 2 = bf16). A fraction `local` of the
    destinations is on the rank's own node and goes over NVLink (`intra`); the rest over `inter`. DeepEP's
    low-latency decode kernels are pure RDMA (local = 0 regardless of placement); its normal (prefill)
    kernels forward over NVLink, local ≈ gpus_per_node / ep for uniform routing.
    """

    d_model: int
    top_k: int
    inter: Link
    intra: Link
    local: float = 0.0
    dispatch_bytes: float = 1.0
    combine_bytes: float = 2.0
    #: network copies per token when the kernels forward over NVLink (DeepEP normal mode: a token crosses
    #: the network once per remote NODE it routes to, then fans out to that node's experts over NVLink);
    #: None = one copy per remote expert (low-latency mode)
    remote_copies: float | None = None

    def __post_init__(self) -> None:
        if self.d_model < 1 or self.top_k < 1:
            raise ValueError("all-to-all: d_model and top_k must be ≥ 1")
        if not 0.0 <= self.local <= 1.0:
            raise ValueError(f"all-to-all: local must be in [0, 1], got {self.local!r}")
        if not (self.dispatch_bytes > 0 and self.combine_bytes > 0):
            raise ValueError("all-to-all: dispatch_bytes and combine_bytes must be > 0")

    def bytes(self, tokens: float) -> tuple[float, float]:
        """(dispatch, combine) bytes one rank sends for `tokens` tokens, over all links."""
        routed = float(tokens) * self.top_k * self.d_model
        return routed * self.dispatch_bytes, routed * self.combine_bytes

    def seconds(self, tokens: float) -> tuple[float, float]:
        """(dispatch, combine) seconds for `tokens` tokens on one rank: the slower of its NVLink and its
        network share, each with its link's latency (both run at once). 0 tokens: 0, 0."""
        if tokens <= 0:
            return 0.0, 0.0
        out = []
        far_share = 1.0 - self.local
        if self.remote_copies is not None:
            far_share = min(far_share, self.remote_copies / self.top_k)
        for nbytes in self.bytes(tokens):
            far = self.inter.seconds(nbytes * far_share)
            near = self.intra.seconds(nbytes * self.local)
            out.append(max(far, near))
        return out[0], out[1]


def remote_nodes(nodes: int, top_k: int) -> float:
    """Expected remote nodes a token's top_k experts fall on, experts spread uniformly over `nodes` nodes:
    (nodes − 1)·(1 − (1 − 1/nodes)^top_k) (DeepSeek-V3 also caps it at 4 nodes per token)."""
    if nodes <= 1:
        return 0.0
    return min((nodes - 1) * (1.0 - (1.0 - 1.0 / nodes) ** top_k), 4.0)


def overlapped(compute: float, comm: float, micro_batches: int) -> float:
    """Seconds of one layer with `compute` seconds of kernels and `comm` seconds of collectives: summed with
    one micro-batch; with two, each micro-batch's transfer hides under the other's compute, so the layer
    takes the longer of the two. The pipeline's fill (one micro-batch's shorter part, once per step, not
    per layer: the two micro-batches stay interleaved across layers) is `pipeline_fill`."""
    if micro_batches < 1:
        raise ValueError(f"overlap: micro_batches must be ≥ 1, got {micro_batches!r}")
    return compute + comm if micro_batches == 1 else max(compute, comm)


def pipeline_fill(compute: float, comm: float, micro_batches: int) -> float:
    """The once-per-step start-up of a two-micro-batch pipeline: the first micro-batch's shorter part of
    a layer runs before anything overlaps it (0 with one micro-batch)."""
    return 0.0 if micro_batches == 1 else min(compute, comm) / micro_batches


@dataclass(frozen=True)
class KVHandoff:
    """Moving one request's KV cache from its prefill GPU(s) to its decode rank.

    bytes = prompt tokens × kv_bytes_per_token (all layers) + the drafter's KV when it is transferred
    (`draft_bytes_per_token`, 0 when it is rebuilt on the decode side). With `layerwise`, each layer's KV
    is sent as soon as that layer's prefill is done (Mooncake/SGLang/DeepSeek's layer-by-layer transfer),
    so only what the prefill's compute does not cover is exposed: max(transfer − prefill compute, last
    layer's share) — at least one layer's worth is always after the last layer. `streams` transfers in
    parallel (one NIC each: a request's KV lives on `streams` prefill GPUs, e.g. TP ranks).
    """

    link: Link
    kv_bytes_per_token: float
    layers: int
    layerwise: bool = True
    draft_bytes_per_token: float = 0.0
    streams: int = 1

    def __post_init__(self) -> None:
        if not (self.kv_bytes_per_token > 0 and self.layers >= 1 and self.streams >= 1):
            raise ValueError("kv hand-off: kv_bytes_per_token > 0, layers ≥ 1 and streams ≥ 1 required")
        if self.draft_bytes_per_token < 0:
            raise ValueError("kv hand-off: draft_bytes_per_token must be ≥ 0")

    def bytes(self, tokens: float) -> float:
        return float(tokens) * (self.kv_bytes_per_token + self.draft_bytes_per_token)

    def transfer_seconds(self, tokens: float) -> float:
        """Seconds the whole transfer takes on the wire (not counting overlap)."""
        return self.link.seconds(self.bytes(tokens) / self.streams)

    def exposed_seconds(self, tokens: float, prefill_seconds: float) -> float:
        """Seconds the hand-off adds after the prefill ends (the decode side can start then)."""
        total = self.transfer_seconds(tokens)
        if not self.layerwise or total == 0.0:
            return total
        last_layer = self.link.latency + (total - self.link.latency) / self.layers
        return max(total - max(prefill_seconds, 0.0), last_layer)
