"""The contract floor: every file format and name that the engine writes and the simulator reads.

Role: one home, below both `engine/` and `sim/`, for what crosses between them — the domain names and the
engine's "prose" = simulator's "chat" alias (`domains`), the acceptance-curves JSON file with its built-in
curves and version handling (`curves`, `builtin_curves`), and the measured-profile CSV (`profile`). Errors
are `specsched.io.errors.InputError`, naming the file, line and field. The engine writes through these modules
and the simulator reads through them; nothing else parses these files.

May import: numpy, the standard library, `specsched.io.errors`, `specsched.cost`.
"""

from specsched.contracts.builtin_curves import DRAFTERS, TABLE1_TAU, builtin_curve, curve_tau
from specsched.contracts.curves import (
    CURVES_VERSION,
    MAX_SAMPLES,
    Curves,
    Samples,
    clipped,
    curve_matrix,
    load_curves,
    parse_curves,
    save_curves,
)
from specsched.contracts.domains import DOMAINS, ENGINE_DOMAINS, engine_domain, sim_domain
from specsched.contracts.profile import Profile, read_profile

__all__ = [
    "CURVES_VERSION",
    "DOMAINS",
    "DRAFTERS",
    "ENGINE_DOMAINS",
    "MAX_SAMPLES",
    "TABLE1_TAU",
    "Curves",
    "Profile",
    "Samples",
    "builtin_curve",
    "clipped",
    "curve_matrix",
    "curve_tau",
    "engine_domain",
    "load_curves",
    "parse_curves",
    "read_profile",
    "save_curves",
    "sim_domain",
]
