"""One policy's engine run as the twin keeps it (`EngineRun`): what `twin.run` measures and `twin.compare`
and `twin.workload` read.

Role: a plain record below the twin's modules, so the three of them share it without importing each other
in a circle.

May import: numpy, the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class EngineRun:
    """One policy's engine run: its rollout summary, the table the simulator times steps with, the draft
    and join seconds, the profile drift around the run and the attempt it took, the cost files written."""

    eng: dict
    eng_tpot: np.ndarray
    wall_s: float
    table: object
    draft_s: float
    join_s: float
    drift: float
    attempt: int
    cost_path: Path
    policy_path: Path | None
    draft_path: Path
    terms: dict = field(default_factory=dict)  # the step-cost terms by name (the profiles' mean)
    speed: float = 1.0  # the speed probe's raw time during the run / during the profiles (a diagnostic)
