"""Built-in per-position conditional acceptance curves (the paper's Fig. 2) and their τ.

Role: the curves every drafter falls back to when no curves file gives its own. A curve `float64[γ]` holds,
for draft positions k = 1..γ, the CONDITIONAL probability that draft k is accepted given drafts 1..k-1 were;
prefix survival is the cumulative product, and τ = 1 + Σ survival when all γ are verified.

- dspark / dflash / eagle3 × math / code / chat: Fig. 2 of the DSpark paper (Qwen3-4B, temperature 1, chain
  drafting, γ = 7), values read off the plot (±0.01; ../shared/research/dspark.md §4.2). With all 7 verified
  they give τ within 0.05 of the paper's Table 1 domain means (dspark.md §6 T1; DSpark/code is the tightest:
  5.166 vs 5.12).
- mtp: MTP-1, ONE position. Source: DeepSeek-V3 technical report (arXiv 2412.19437 §5.4.3): "the acceptance
  rate of the second token prediction ranges between 85% and 90% across various generation topics".
  ASSUMPTION (ours): math 0.90, code 0.88, chat 0.85, ordered like every drafter in Fig. 2.
- none: no drafts, an empty curve.

May import: numpy, the standard library, `specsched.io.errors`, `specsched.contracts.domains`.
"""

from __future__ import annotations

import numpy as np

from specsched.contracts.domains import DOMAINS
from specsched.io.errors import InputError

DRAFTERS = ("none", "mtp", "eagle3", "dflash", "dspark")

_FIG2: dict[str, dict[str, tuple[float, ...]]] = {
    "dflash": {
        "math": (0.885, 0.826, 0.820, 0.834, 0.841, 0.839, 0.828),
        "code": (0.865, 0.815, 0.797, 0.800, 0.809, 0.800, 0.777),
        "chat": (0.718, 0.648, 0.638, 0.660, 0.683, 0.692, 0.688),
    },
    "eagle3": {
        "math": (0.810, 0.823, 0.838, 0.844, 0.850, 0.855, 0.850),
        "code": (0.771, 0.774, 0.781, 0.791, 0.787, 0.794, 0.784),
        "chat": (0.533, 0.589, 0.642, 0.679, 0.709, 0.730, 0.733),
    },
    "dspark": {
        "math": (0.905, 0.890, 0.888, 0.886, 0.887, 0.890, 0.883),
        "code": (0.886, 0.872, 0.860, 0.861, 0.858, 0.859, 0.851),
        "chat": (0.736, 0.738, 0.740, 0.745, 0.759, 0.766, 0.761),
    },
    "mtp": {"math": (0.90,), "code": (0.88,), "chat": (0.85,)},
    "none": {"math": (), "code": (), "chat": ()},
}

# Paper Table 1, Qwen3-4B domain means (dspark.md §6 T1): the check target for the built-in curves.
TABLE1_TAU: dict[str, dict[str, float]] = {
    "dspark": {"math": 5.57, "code": 5.12, "chat": 3.49},
    "dflash": {"math": 4.80, "code": 4.44, "chat": 2.95},
    "eagle3": {"math": 4.56, "code": 3.87, "chat": 2.40},
}


def check_drafter(drafter: str) -> None:
    if drafter not in DRAFTERS:
        raise InputError(
            f"unknown drafter {drafter!r} (expected one of {', '.join(DRAFTERS)})", field="drafter.name"
        )


def check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise InputError(f"unknown domain {domain!r} (expected one of {', '.join(DOMAINS)})", field="domain")


def builtin_curve(drafter: str, domain: str) -> np.ndarray:
    """Built-in conditional acceptance curve `float64[γ_max]` (γ_max: 7, mtp 1, none 0); a fresh copy."""
    check_drafter(drafter)
    check_domain(domain)
    return np.array(_FIG2[drafter][domain], dtype=np.float64)


def curve_tau(curve: np.ndarray) -> float:
    """τ = 1 + Σ_k Π_{i≤k} c_i: mean tokens per step when every position of `curve` is verified."""
    return float(1.0 + np.cumprod(np.asarray(curve, dtype=np.float64)).sum())
