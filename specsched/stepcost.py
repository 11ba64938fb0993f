"""The price of one engine step: `StepCost.bill(StepShape) -> StepBill`, named parts summed in one order.

Role: the one place a step's seconds are computed. The simulator's replica (`sim.server`) describes each
step it plans as a `StepShape` (what the step holds: requests, tokens, padding, contexts, draft depths) and
asks its deployment's `StepCost` for the bill; the multi-step decode path (`sim.steps`) asks `bills` for K
pure-decode steps at once, with the same IEEE additions in the same order. The engine-vs-simulator twin
reads and writes the measured terms through `TERMS` (profile field ↔ config key ↔ term), so each term
has one name per layer and one row here.

A step's seconds are the parts of `PARTS` added left to right (a fixed order, so the total is bit-for-bit
the same in every path and every release):

    draft        the draft pass: draft_s[R] (full drafting) or `drafter.seconds(depths)` (adaptive), then
                 intake_s · (drafts verified since the drafting requests last drafted − drafting ·
                 (1 + intake_ref)) (clamped at 0), then draft_context_s · drafting · longest context
    fixed        cost.request_seconds · running requests (each request's KV read once)
    context      kv_s · KV tokens held (target + drafter seconds per KV token)
    forward      latency[verify + prefill tokens] (the table's forward pass)
    prefill      prefill_request_s · requests prefilling in the step
    pad          pad_s · (padded − verify) verify slots, when no prefill-request term was charged
    context_pad  context_pad_s · running requests · longest context (every row's KV padded to it)
    draft_host   a drafter priced by an engine (`DraftCost.gamma` > 0, `specsched.spec_versions`): the
                 exposed host work of its step (proposer input preparation, rejection launches, the
                 scheduler work an engine without overlap exposes: host_s + request_s · drafting), named
                 apart from `draft`, which keeps the GPU passes
    reject       the rejection sampler over the target's probabilities: position_s · drafted positions
    verify_kv    the verify pass's attention kernel beyond the decode path's KV read: verify_kv_s · KV
                 tokens held, on a step that verifies drafts
    tree         tree_kv_s · KV tokens of the requests verifying a draft tree (tree-masked attention runs
                 in a slower kernel than the chain's: vLLM's tree backend, vllm-project/vllm#20401;
                 `sim.tree_run` and, with drafter.topk > 1, `sim.stepcost.step_cost` set it)
    attention    causal prefill attention: the table's attn_pair_seconds · the query-key pairs of the step's
                 prefill chunks (a chunk of c tokens after d already in the KV cache: c·d + c·(c + 1)/2;
                 `specsched.price.tokens`), quadratic in a prompt, so not a function of B

To add a term (one room: this file, plus its config key; the rest follows from `PARTS` and `TERMS`):
1. here: a `StepCost` field with default 0.0 (one name, seconds per unit); its part at the END of `PARTS`
   and `StepBill` (new parts are added after the existing ones, so every existing figure stays
   bit-identical) computed in `bill`; in `bills` and `RunBills` too, or make it part of
   `varies_within_run` (the multi-step path then stays off while it is on); its `TERMS` row (config key,
   and the engine-profile field when the engine measures it);
2. `sim/config.py`: the key, its sentence in the section docstring and its range check; `sim/bounds.py`:
   its upper bound; then `python -m sim.config_doc` regenerates docs/config.md;
3. only when it needs a count the step does not carry yet: a `StepShape` field, filled in
   `sim.server.Replica._plan`.
`sim.stepcost.step_cost` reads every `TERMS` key by itself; summary.json (`step_s_<part>`), the recorder
and the timeline (`cost_us`) pick the new part up from `PARTS`. E.g. a per-step overhead term touches
specsched/stepcost.py, sim/config.py, sim/bounds.py and docs/config.md.

May import: numpy, the standard library, `specsched.cost`, `specsched.draft_cost`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from specsched.cost import CostTable
from specsched.draft_cost import DraftCost

#: the parts of a step's seconds, in the order they are added
PARTS = ("draft", "fixed", "context", "forward", "prefill", "pad", "context_pad",
         "draft_host", "reject", "verify_kv", "tree", "attention")  # fmt: skip

#: term -> (config key, Profile field or None): the one mapping between a measured profile, a config and
#: the StepCost that prices a simulated step (profile fields are per-R dicts, `specsched.contracts`)
TERMS = {
    "prefill_request_s": ("server.prefill_request_seconds", None),
    "pad_s": ("server.pad_token_seconds", "pad_s"),
    "context_pad_s": ("server.padded_context_seconds", "context_verify_s"),
    "draft_context_s": ("drafter.padded_context_seconds", "context_draft_s"),
    "intake_s": ("drafter.intake_seconds", "intake_s"),
    "intake_ref": ("drafter.intake_tokens", "intake_tokens"),
}


def profile_terms(prof, n: int) -> dict[str, float]:
    """The terms a measured profile (`specsched.contracts.Profile`) gives at R = n, by term name (each
    `TERMS` entry with a profile field; 0 where it has none): the padded-context terms only for a profile
    whose steps were moved to no context (`context_ref == 0`), else its table and draft seconds hold them."""
    out = {}
    for term, (_, fieldname) in TERMS.items():
        if fieldname is None:
            continue
        moved = not fieldname.startswith("context_") or prof.context_ref == 0
        out[term] = float(getattr(prof, fieldname).get(n, 0.0)) if moved else 0.0
    return out


def prefill_pairs(chunks: np.ndarray, done: np.ndarray) -> int:
    """Causal query-key pairs of a step's prefill chunks (`StepShape.pairs`): a chunk of c tokens after
    the d of its prompt already in the KV cache (prefilled, or a prefix hit) attends to those d and to
    its own causal triangle, c·d + c·(c + 1)/2. chunks, done: int64[n]."""
    c = np.asarray(chunks, dtype=np.int64)
    return int(np.add.reduce(c * np.asarray(done, dtype=np.int64) + c * (c + 1) // 2))


class StepShape(NamedTuple):
    """What one step holds (all counts are ints).

    requests: running requests (decoding and prefilling); decoding: R, requests verifying this step;
    tokens: batched tokens, verify + prefill; verify: Σ (1 + ℓ_r); prefilling: requests prefilling in
    the step; padded: R·(1 + max ℓ_r), the verify slots once rows are padded to the longest; kv: KV
    tokens the running requests hold; longest: the longest running context (prompt + generated);
    drafting: requests drafting; depths: int64[R] planned draft depths (adaptive), None = full drafting;
    intake: Σ drafts the drafting requests verified since they last drafted (with intake_s);
    tree_kv: KV tokens held by the requests verifying a draft tree (with tree_kv_s); pairs: causal
    query-key pairs of the prefill chunks (with the table's attn_pair_seconds).
    """

    requests: int
    decoding: int
    tokens: int
    verify: int
    prefilling: int = 0
    padded: int = 0
    kv: int = 0
    longest: int = 0
    drafting: int = 0
    depths: np.ndarray | None = None
    intake: int = 0
    tree_kv: int = 0
    pairs: int = 0


class StepBill(NamedTuple):
    """A step's seconds by part (`PARTS`, module doc) and their sum in that order (`seconds`)."""

    draft: float
    fixed: float
    context: float
    forward: float
    prefill: float
    pad: float
    context_pad: float
    draft_host: float
    reject: float
    verify_kv: float
    tree: float
    attention: float
    seconds: float

    @property
    def parts(self) -> tuple[float, ...]:
        """The parts in `PARTS` order (without the total)."""
        return tuple(self[: len(PARTS)])


class RunBills(NamedTuple):
    """K pure-decode steps of one fixed batch (`StepCost.bills`): draft and fixed are the same each step;
    forward, pad and seconds are lists of K floats; the other parts are 0."""

    draft: float
    fixed: float
    forward: list[float]
    pad: list[float] | None
    seconds: list[float]

    def columns(self) -> tuple[list[float] | float | None, ...]:
        """Each part of `PARTS` as a float (the same every step), a list of K floats or None (zero)."""
        rest = (None,) * (len(PARTS) - 6)
        return (self.draft, self.fixed, None, self.forward, None, self.pad, *rest)

    def first(self, keep: int) -> RunBills:
        """The bills of the first `keep` steps."""
        pad = None if self.pad is None else self.pad[:keep]
        return RunBills(self.draft, self.fixed, self.forward[:keep], pad, self.seconds[:keep])

    def each(self):
        """Each step's `StepBill`, in step order."""
        columns = [[c] * len(self.seconds) if isinstance(c, float) else c for c in self.columns()]
        zero = [0.0] * len(self.seconds)
        for parts in zip(*(zero if c is None else c for c in columns), self.seconds):
            yield StepBill(*parts)


@dataclass(frozen=True, eq=False)
class StepCost:
    """Everything that prices a step (seconds): the cost table, the draft cost and every per-step term.

    cost: the table that times steps (request_seconds, kv_token_seconds); draft_s: float64[max R + 1],
    the draft pass by drafting requests R (full drafting); latency: float64[budget + 1], the forward pass
    by batched tokens; drafter: prices a pass from planned depths (adaptive drafting; None = full only);
    draft_kv_s: the draft cost's seconds per KV token held; tree_kv_s: the tree kernel's extra seconds per
    KV token of a tree-verifying request (`tree` part); the terms (module doc) are 0 when off.
    """

    cost: CostTable
    draft_s: np.ndarray
    latency: np.ndarray
    drafter: DraftCost | None = None
    draft_kv_s: float = 0.0
    prefill_request_s: float = 0.0
    pad_s: float = 0.0
    context_pad_s: float = 0.0
    draft_context_s: float = 0.0
    intake_s: float = 0.0
    intake_ref: float = 0.0
    tree_kv_s: float = 0.0
    latency_list: list[float] = field(init=False, repr=False)
    kv_s: float = field(init=False)

    def __post_init__(self) -> None:
        for name in ("draft_kv_s", "tree_kv_s", *TERMS):
            if not getattr(self, name) >= 0.0:
                raise ValueError(f"StepCost: {name} must be ≥ 0 (got {getattr(self, name)!r})")
        object.__setattr__(self, "latency_list", self.latency.tolist())  # for per-step Python sums
        # seconds per KV token held by the running requests, charged every step (target + drafter)
        object.__setattr__(self, "kv_s", self.cost.kv_token_seconds + self.draft_kv_s)

    @property
    def varies_within_run(self) -> bool:
        """Whether a step's seconds depend on more than R and the verify lengths (the KV held, the longest
        context, the previous step's acceptance): the multi-step decode path then stays off."""
        named = self.drafter is not None and bool(self.drafter.gamma)  # parts that need the depths
        return bool(
            self.kv_s or self.intake_s or self.context_pad_s or self.draft_context_s or self.tree_kv_s
            or named
        )

    def draft(
        self,
        decoding: int,
        depths: np.ndarray | None = None,
        drafting: int = 0,
        intake: int = 0,
        longest: int = 0,
        base: float | None = None,
    ) -> float:
        """The draft part (module doc) of a step with `decoding` requests, `drafting` of them drafting
        (`depths`: their planned depths, None = γ each), `intake` drafts verified since they last drafted
        and the longest running context `longest`; `base`: the pass already priced from `depths`."""
        if base is not None:
            draft = base
        elif depths is None:
            draft = float(self.draft_s[decoding])
        else:
            draft = self.drafter.seconds(depths, self.cost)
        if self.intake_s and drafting:
            extra = intake - drafting * (1.0 + self.intake_ref)
            draft = max(draft + self.intake_s * extra, 0.0)
        if self.draft_context_s:  # every drafting row's context padded to the longest
            draft += self.draft_context_s * drafting * longest
        return draft

    def bill(self, shape: StepShape, draft: float | None = None) -> StepBill:
        """The bill of one step. `draft`: its draft part when priced already (the replica prices the
        draft pass when it plans it, before the step's admissions); None = from `shape`'s draft fields."""
        if draft is None:
            draft = self.draft(
                shape.decoding,
                depths=shape.depths,
                drafting=shape.drafting,
                intake=shape.intake,
                longest=shape.longest,
            )
        fixed = self.cost.request_seconds * shape.requests
        context = self.kv_s * shape.kv
        forward = self.latency_list[shape.tokens]
        prefill = pad = context_pad = 0.0
        if self.prefill_request_s and shape.prefilling:
            prefill = self.prefill_request_s * shape.prefilling
        elif self.pad_s and shape.decoding:  # rows padded to the longest (a join's is in its own cost)
            pad = self.pad_s * (shape.padded - shape.verify)
        if self.context_pad_s:  # every row's KV padded to the longest context
            context_pad = self.context_pad_s * shape.requests * shape.longest
        host = reject = verify_kv = 0.0
        if self.drafter is not None and self.drafter.gamma and shape.decoding:
            host, reject = self.drafter.named_parts(shape.decoding, shape.depths)
            if host or reject:
                draft = max(draft - host - reject, 0.0)
                verify_kv = self.drafter.verify_kv_s * shape.kv
        tree = self.tree_kv_s * shape.tree_kv if self.tree_kv_s else 0.0
        pair_s = self.cost.attn_pair_seconds
        attention = pair_s * shape.pairs if pair_s and shape.pairs else 0.0
        seconds = (
            draft + fixed + context + forward + prefill + pad + context_pad + host + reject + verify_kv + tree
        )
        if attention:  # added last: a step without prefill attention keeps its bit-identical sum
            seconds += attention
        return StepBill(
            draft, fixed, context, forward, prefill, pad, context_pad, host, reject, verify_kv, tree,
            attention, seconds,
        )  # fmt: skip

    def bills(self, n: int, verify: list[int], padded: list[int] | None = None) -> RunBills:
        """K pure-decode steps of all n running requests decoding, with full drafting (`varies_within_run`
        False): verify[k] = Σ (1 + ℓ) of step k, padded[k] = n·(1 + max ℓ) (needed when pad_s is on).
        The same additions, in the same order, as K calls of `bill`."""
        draft = float(self.draft_s[n])
        fixed = self.cost.request_seconds * n
        base, latency = draft + fixed + 0.0, self.latency_list  # + context: 0 on this path
        forward = [latency[b] for b in verify]
        seconds = [base + f for f in forward]
        pad = None
        if self.pad_s:
            pad = [self.pad_s * (p - b) for p, b in zip(padded, verify)]
            seconds = [s + d for s, d in zip(seconds, pad)]
        return RunBills(draft, fixed, forward, pad, seconds)

    def shortest(self, n: int, gamma: int) -> float:
        """A lower bound on a pure-decode step of n requests (seconds): the cheapest B in n..n·(γ + 1)."""
        lat = self.latency[n : n * (gamma + 1) + 1]
        return float(self.draft_s[n] + self.cost.request_seconds * n + lat.min())
