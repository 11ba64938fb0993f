"""When a run is near saturation, and the one line that says so (issue 33 item 3).

Role: the threshold and the flag that `specbed vllm validate` and `specbed vllm compare` print for a run
whose load factor (offered / sustainable request rate, `sim.metrics.load_factor`) is above it: there a
small error in the step cost moves the predicted latency a lot (a queue near its service rate).

May import: the standard library.
"""

from __future__ import annotations

import math

#: a run whose load factor is above this is near saturation: small cost errors move its latency a lot
NEAR_SATURATION = 0.9


def saturation_note(name: str, load: dict) -> str | None:
    """The one-line flag of a run above `NEAR_SATURATION` (`sim.metrics.load_factor`'s keys), None below
    it or without an open-loop load factor (a closed loop, an older run's summary)."""
    rho, offered, sustainable = (load.get(k) for k in ("load_factor", "offered_req_s", "sustainable_req_s"))
    finite = all(isinstance(x, int | float) and math.isfinite(x) for x in (rho, offered, sustainable))
    if not (finite and rho > NEAR_SATURATION):
        return None
    return (
        f"{name}: near saturation: small cost errors move latency a lot — offered {offered:.2f} req/s, "
        f"sustainable {sustainable:.2f} req/s (load factor {rho:.2f} > {NEAR_SATURATION})"
    )
