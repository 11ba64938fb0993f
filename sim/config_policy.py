"""`[policy]`: the config section built from the one policy registry (`specsched.registry`).

Role: `PolicyConfig`'s keys are `name`, every parameter any registered policy declares (one key per name:
a policy added in one file of specsched/contrib/ gets its keys in TOML, `--set policy.KEY=...`, sweeps, the
search and docs/config.md with nothing else to edit), `draft` and `slack`. Each set parameter is checked
by the declaring policy's own `Param` (bounds, type) and refused, naming the key, when the chosen policy
does not take it. The class is a frozen dataclass like every other section, made once at import from the
registry (sealed by then).

May import: the standard library, `specsched` (registry, policy and draft-mode names), `sim.bounds`.
"""

from __future__ import annotations

from dataclasses import field, make_dataclass

from sim.bounds import check_bounds
from sim.bounds import check_choice as _check_choice
from sim.bounds import check_range as _check_range
from sim.bounds import fail as _fail
from specsched import DRAFT_MODES, POLICIES
from specsched.registry import Param, all_params, get, specs

#: the staleness an adaptive policy without its own `delay` takes (`specsched.depth.adaptive`)
_ADAPTIVE_DELAY = Param("delay", 1, 0, doc="steps of staleness of the rows the depth plan reads")

_INTRO = """The `specsched` policy called every step, and its parameters.

name: one of `specsched.POLICIES` (`specsched.registry`: the built-ins and every file of specsched/contrib/).
draft: "full" (γ drafted for every request: the paper) or "adaptive" (depths planned too from lagged
confidences, `specsched.depth`; `ar` ignores it, `lookahead` refuses it). slack (adaptive only): the depth
plan's hedge in [0, 1), the deepest plan within that fraction of the best Θ; None = 0.1.
Parameters (declared by the policies; None = the policy's default; one the chosen policy does not take is
an error):"""


def _doc() -> str:
    lines = [_INTRO]
    for name, p in all_params().items():
        users = ", ".join(s.name for s in specs().values() if s.param(name) is not None)
        if name == "delay":
            users += ", any adaptive"  # draft = "adaptive" gives every policy a delay
        lines.append(f"{name} ({users}): {p.doc or 'see the policy'}.")
    return "\n".join(lines)


class _PolicyKeys:
    """The behaviour of `PolicyConfig` (its fields come from the registry)."""

    _section = "policy"

    def __post_init__(self) -> None:
        s = self._section
        check_bounds(s, self)
        _check_choice(s, "name", self.name, POLICIES)
        _check_choice(s, "draft", self.draft, DRAFT_MODES)
        spec = get(self.name)
        if self.draft == "adaptive" and spec.control:
            raise _fail(s, "draft", f"policy '{self.name}' is a negative control; it takes draft = 'full'")
        if self.slack is not None:
            _check_range(s, "slack", self.slack, 0, 1, hi_open=True)
            if self.draft != "adaptive":
                raise _fail(s, "slack", "applies only with policy.draft = 'adaptive'")
        accepted = {p.name: p for p in spec.params}
        if self.draft == "adaptive":
            accepted.setdefault("delay", _ADAPTIVE_DELAY)
        for key in all_params():
            value = getattr(self, key)
            if value is None:
                continue
            if key not in accepted:
                takes = ", ".join(accepted) or "none"
                raise _fail(s, key, f"policy '{self.name}' takes no parameter {key!r} (it takes: {takes})")
            try:
                accepted[key].check(self.name, value)
            except ValueError as err:
                raise _fail(s, key, str(err)) from None

    def params(self) -> dict:
        """The parameters to pass to `specsched.make_policy` (those set)."""
        params = {k: getattr(self, k) for k in all_params() if getattr(self, k) is not None}
        if self.draft == "full":
            return params
        extra = {} if self.slack is None else {"slack": self.slack}
        return {"draft": self.draft, **params, **extra}


def _build() -> type:
    keys = [("name", "str", field(default="dspark"))]  # annotations as text, as in every other section
    for name, p in all_params().items():
        keys.append((name, "int | None" if p.integer else "float | None", field(default=None)))
    keys += [("draft", "str", field(default="full")), ("slack", "float | None", field(default=None))]
    ns = {"__doc__": _doc(), "__module__": __name__, "__qualname__": "PolicyConfig"}
    return make_dataclass("PolicyConfig", keys, bases=(_PolicyKeys,), namespace=ns, frozen=True)


PolicyConfig = _build()

#: the tree policies `specbed run` plans a draft tree with (drafter.topk > 1, `sim.tree_step`)
RUN_TREE_POLICIES = ("fixed_tree", "dspark_tree", "dspark_tree_global")


def check_tree_policy(cfg) -> None:
    """drafter.topk > 1: the [policy] must plan tree nodes (RUN_TREE_POLICIES) with full drafting."""
    if cfg.name not in RUN_TREE_POLICIES:
        msg = f"drafter.topk > 1 drafts a tree: choose a tree policy ({', '.join(RUN_TREE_POLICIES)})"
        raise _fail("policy", "name", msg + f"; got {cfg.name!r}")
    if cfg.draft != "full":
        raise _fail("policy", "draft", "a draft tree (drafter.topk > 1) is drafted in full: draft = 'full'")
    if cfg.name == "dspark_tree_global" and cfg.delay == 0:
        raise _fail("policy", "delay", "must be ≥ 1 for a draft tree (delay 0 reads the current rows)")
