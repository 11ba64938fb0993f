"""Write vLLM-measured acceptance into a curves file (the current version), alone or merged into another.

Role: the writing half of `specbed curves from-vllm`: one (drafter, domain) conditional curve from an
`Acceptance` (`bridge.acceptance`), stored under any drafter name, through the contract floor's
`Curves` / `save_curves` (`specsched.contracts`), so the reader checks the document before it is written.
With `into`, every other curve, confidence stat and sample of that file is kept; the entry replaced drops
its own confidence stats (they belonged to the old curve). The file is written under a temporary name and
renamed: bad input never leaves a half-written or lost curves file.

May import: numpy, the standard library, `specsched` (errors, contracts, safeio), `bridge.acceptance`.
"""

from __future__ import annotations

from pathlib import Path

from bridge.acceptance import Acceptance
from specsched.contracts import CURVES_VERSION, DOMAINS, Curves, load_curves, save_curves
from specsched.contracts.curves import DRAFTER_NAME
from specsched.io import safeio
from specsched.io.errors import InputError


def merged_curves(acc: Acceptance, drafter: str, domain: str, base: Curves | None) -> Curves:
    """`base` (or nothing) with curves[drafter][domain] = acc's conditional curve (6 decimals)."""
    if drafter == "none" or DRAFTER_NAME.fullmatch(drafter) is None:
        raise InputError(
            f"bad drafter name {drafter!r} (letters, digits, _ . + -; not 'none')", field="--drafter"
        )
    if domain not in DOMAINS:
        raise InputError(
            f"unknown domain {domain!r} (expected one of {', '.join(DOMAINS)})", field="--domain"
        )
    curve = tuple(round(float(c), 6) for c in acc.conditional())
    curves = {d: dict(per) for d, per in (base.curves if base else {}).items()}
    curves.setdefault(drafter, {})[domain] = curve
    confidence = {
        d: {dom: st for dom, st in per.items()} for d, per in (base.confidence if base else {}).items()
    }
    confidence.get(drafter, {}).pop(domain, None)
    samples = dict(base.samples) if base else {}
    if drafter in samples and samples[drafter][domain].conf.shape[1] != len(curve):
        raise InputError(
            f"has samples of {samples[drafter][domain].conf.shape[1]} positions for this drafter, but vLLM "
            f"measured {len(curve)}: write to another file (--out) or another --drafter name",
            file=base.source if base else None,
            field=f"samples.{drafter}.{domain}",
        )
    note = f"{drafter}/{domain} from vLLM ({acc.kind}: {', '.join(Path(s).name for s in acc.sources)})"
    if acc.notes:
        note += " [" + "; ".join(acc.notes) + "]"
    description = f"{base.description}; {note}" if base and base.description else note
    return Curves(
        curves, {d: c for d, c in confidence.items() if c}, samples, description, version=CURVES_VERSION
    )


def write_acceptance_curves(
    acc: Acceptance, drafter: str, domain: str, *, out: str | None, into: str | None
) -> str:
    """Write the merged curves file to `out` (default: `into`); returns the path written."""
    base = load_curves(into) if into is not None else None
    curves = merged_curves(acc, drafter, domain, base)
    path = Path(out if out is not None else into)
    safeio.check_file(path)
    save_curves(curves, path)  # atomic (specsched.io.safeio): a full disk keeps the old file
    return str(path)
