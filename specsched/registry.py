"""The one policy registry: every verify-length policy, the parameters it declares and what it claims.

Role: the simulator (`sim.config`'s [policy] keys), the engine (`engine.loop`), `specbed verify` (which
policies it proves), `specbed plan` (which it compares), sweeps and the search (the config keys) and the
launch lines (`analysis.search.launch`: which policies vLLM runs as adaptive verification) all read this
table; nothing else lists policies. A policy is declared once, with `register` (or the `policy`
decorator), in its own module: the built-ins in `specsched.policies`, any other in a file of
`specsched/contrib/` (every module there is imported when `specsched.policies` is: docs/policies.md).

A policy function is called positionally, with its parameters as keywords:

    fn(conf, cost, stale, max_batch_tokens, **params) -> int64[R]

(conf float64[R, γ], cost a CostTable, stale float64[R, γ] or None, max_batch_tokens an int or None; the
names of the four positional arguments are the function's own, so a parameter may be called `budget`).
A parameter is a `Param`: a name, a default, bounds and whether it is an integer; every value reaching
the function has been checked against them (ValueError naming the policy and the parameter, one line).
Names the call or the config already use (RESERVED) are refused at registration, in one line.

Claims: `uses_stale` (the caller passes the confidences of `delay` steps earlier as `stale`; a policy
that uses them declares a `delay` parameter, its staleness), `control` (a negative control: known lossy,
kept so the proofs can show they catch it), `plans_depths` (whether draft = "adaptive" may plan its draft
depths; false for `ar`, which ignores the mode), `adaptive_verification` (vLLM runs it as DSpark's
confidence-scheduled verification, PR #47808; else a fixed K). A policy is `lossless` when it is not a
control and, if it reads stale rows, its delay is ≥ 1 — a CLAIM, which the proofs (engine/proof: exact
enumeration at batch ≥ 2, the firewall, random batch-level cases) check for every registered policy.

The table is filled while `specsched.policies` is imported (built-ins, then contrib files) and sealed
after that; a later `register` is refused.

May import: the standard library (importlib, pkgutil for the contrib files).
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: names a parameter may not take: the call's own (`Policy(conf, cost, stale=, max_batch_tokens=,
#: depths=)`) and the [policy] config keys that are not parameters (`name`, `draft`, `slack`)
RESERVED = frozenset(
    {"conf", "cost", "stale", "max_batch_tokens", "depths", "name", "draft", "slack", "params"}
)


@dataclass(frozen=True)
class Param:
    """One declared parameter: `name`, `default`, bounds lo ≤ value ≤ hi (hi None = none), `integer`
    (else a float), `doc` (one line, shown in docs/config.md and `specbed verify`)."""

    name: str
    default: int | float
    lo: float = 0
    hi: float | None = None
    integer: bool = True
    doc: str = ""

    def check(self, policy: str, value) -> int | float:
        """`value` as this parameter's type, or ValueError naming the policy and parameter (one line)."""
        what = "an integer" if self.integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not _numpy_number(value):
            raise ValueError(f"policy '{policy}': parameter {self.name} must be {what}, got {value!r}")
        if not math.isfinite(float(value)) or (self.integer and not float(value).is_integer()):
            raise ValueError(f"policy '{policy}': parameter {self.name} must be {what}, got {value!r}")
        if value < self.lo or (self.hi is not None and value > self.hi):
            span = f"≥ {self.lo:g}" if self.hi is None else f"in [{self.lo:g}, {self.hi:g}]"
            raise ValueError(f"policy '{policy}': parameter {self.name} must be {span}, got {value!r}")
        return int(value) if self.integer else float(value)


def _numpy_number(value) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iuf"


@dataclass(frozen=True)
class PolicySpec:
    """A registered policy (module doc): its function, declared parameters and claims."""

    name: str
    fn: Callable
    params: tuple[Param, ...] = ()
    uses_stale: bool = False
    control: bool = False
    plans_depths: bool = True
    adaptive_verification: bool = False
    doc: str = ""

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def resolve(self, given: Mapping[str, object]) -> dict[str, int | float]:
        """Every declared parameter's value (`given` or the default), checked; ValueError (one line) for an
        unknown or bad one."""
        unknown = sorted(set(given) - {p.name for p in self.params})
        if unknown:
            accepted = ", ".join(p.name for p in self.params) or "none"
            raise ValueError(f"policy '{self.name}': unknown parameter {unknown[0]!r} (accepted: {accepted})")
        return {p.name: p.check(self.name, given.get(p.name, p.default)) for p in self.params}

    def lossless(self, params: Mapping[str, object]) -> bool:
        """The claim (module doc): not a control, and a delay ≥ 1 if it reads stale rows."""
        return not self.control and (not self.uses_stale or int(params.get("delay", 0)) >= 1)


_SPECS: dict[str, PolicySpec] = {}  # filled once, while specsched.policies is imported; then sealed
_STATE = {"sealed": False}


def register(spec: PolicySpec) -> PolicySpec:
    """Add `spec` to the registry (while `specsched.policies` is imported: the built-ins, then the files of
    specsched/contrib/); ValueError (one line) once sealed, or for a declaration `check_spec` refuses."""
    if _STATE["sealed"]:
        raise ValueError(
            f"policy '{spec.name}': the registry is sealed; declare a policy in a file of specsched/contrib/"
        )
    check_spec(spec)
    _SPECS[spec.name] = spec
    return spec


def check_spec(spec: PolicySpec) -> None:
    """ValueError (one line, naming the policy) if `spec` cannot be called as declared: a taken or bad name,
    a reserved or repeated parameter, a parameter declared elsewhere with another type, an illegal default,
    a stale-reading policy without `delay`, a function that does not take the call."""
    name = spec.name
    if not name.isidentifier() or name in _SPECS:
        raise ValueError(
            f"policy {name!r}: " + ("already registered" if name in _SPECS else "not an identifier")
        )
    seen: set[str] = set()
    for p in spec.params:
        if not p.name.isidentifier() or p.name in RESERVED or p.name in seen:
            why = (
                "is reserved by the call or the config"
                if p.name in RESERVED
                else "is not a unique identifier"
            )
            raise ValueError(
                f"policy '{name}': parameter name {p.name!r} {why} (reserved: {', '.join(sorted(RESERVED))})"
            )
        seen.add(p.name)
        other = all_params().get(p.name)
        if other is not None and other.integer != p.integer:
            raise ValueError(f"policy '{name}': parameter {p.name!r} is declared elsewhere as {_kind(other)}")
        p.check(name, p.default)  # the default must be legal
    if spec.uses_stale and spec.param("delay") is None:
        raise ValueError(f"policy '{name}': reads stale rows, so it must declare a `delay` parameter")
    _check_signature(spec)


def _kind(p: Param) -> str:
    return "an integer" if p.integer else "a number"


def _check_signature(spec: PolicySpec) -> None:
    try:
        sig = inspect.signature(spec.fn)
    except (TypeError, ValueError):
        return  # a builtin or C function: trust it
    ps = list(sig.parameters.values())
    positional = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in ps)
    if len(positional) < 4 and not varargs:
        raise ValueError(
            f"policy '{spec.name}': its function must take (conf, cost, stale, max_batch_tokens, ...)"
        )
    first = {p.name for p in positional[:4]}
    kwargs = any(p.kind == p.VAR_KEYWORD for p in ps)
    names = {p.name for p in ps}
    for p in spec.params:
        if p.name in first:
            raise ValueError(
                f"policy '{spec.name}': parameter {p.name!r} is also the name of one of its function's four "
                "call arguments; rename that argument"
            )
        if p.name not in names and not kwargs:
            raise ValueError(f"policy '{spec.name}': its function takes no keyword {p.name!r}")


def policy(name: str, *, params=(), **claims) -> Callable[[Callable], Callable]:
    """Decorator form of `register`: `@policy("mine", params=[Param("k", 1)], uses_stale=False)`."""

    def deco(fn: Callable) -> Callable:
        register(PolicySpec(name, fn, tuple(params), doc=claims.pop("doc", _first_line(fn)), **claims))
        return fn

    return deco


def _first_line(fn: Callable) -> str:
    return (inspect.getdoc(fn) or "").split("\n")[0]


def get(name: str) -> PolicySpec:
    """The registered policy `name`, or ValueError listing the known ones (one line)."""
    if name not in _SPECS:
        raise ValueError(f"unknown policy {name!r} (choose from {', '.join(_SPECS)})")
    return _SPECS[name]


def specs() -> Mapping[str, PolicySpec]:
    """Every registered policy, in registration order (read-only)."""
    return MappingProxyType(_SPECS)


def names() -> tuple[str, ...]:
    return tuple(_SPECS)


def all_params() -> dict[str, Param]:
    """Every declared parameter name -> its first declaration (the [policy] config keys)."""
    out: dict[str, Param] = {}
    for spec in _SPECS.values():
        for p in spec.params:
            out.setdefault(p.name, p)
    return out


def load_contrib() -> None:
    """Import every module of `specsched.contrib` (each registers its policy), then seal the registry."""
    if _STATE["sealed"]:
        return
    package = importlib.import_module("specsched.contrib")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        importlib.import_module(f"specsched.contrib.{info.name}")
    _STATE["sealed"] = True
