"""The simulator's name for the acceptance-curves contract (kept so `from sim.curves import ...` works).

Role: a re-export only. The curves file's types, reader, writer, version handling and the built-in curves
live in `specsched.contracts` (one implementation shared with the engine, which writes the files).

May import: `specsched.contracts`.
"""

from specsched.contracts.builtin_curves import DRAFTERS, TABLE1_TAU, builtin_curve, curve_tau
from specsched.contracts.curves import (
    CONFIDENCE_KEYS,
    CURVES_VERSION,
    Curves,
    Samples,
    curve_matrix,
    load_curves,
    parse_curves,
    save_curves,
)
from specsched.contracts.domains import DOMAINS

__all__ = [
    "CONFIDENCE_KEYS",
    "CURVES_VERSION",
    "DOMAINS",
    "DRAFTERS",
    "TABLE1_TAU",
    "Curves",
    "Samples",
    "builtin_curve",
    "curve_matrix",
    "curve_tau",
    "load_curves",
    "parse_curves",
    "save_curves",
]
