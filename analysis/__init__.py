"""analysis — sweeps of the simulator, Pareto frontiers, and the gains read off them.

- `analysis.sweepfile`: sweep TOML -> `Sweep` -> resolved, keyed `Cell`s.
- `analysis.runner`: `run_sweep` (serial, local process pool, or Ray), crash-safe and resumable.
- `analysis.store`: the results folder (manifest, one file per cell, consolidated results).
- `analysis.pareto`: frontiers in (throughput per GPU, per-user speed), iso-SLO / iso-throughput gains.
- `analysis.report`, `analysis.plot`: the gains table, markdown report and Pareto figure.
- `analysis.cli`: `specbed sweep | pareto | report`.

Importing this package is cheap: numpy and the standard library; `sim`, matplotlib and ray load lazily.
"""

from analysis.pareto import Frontier, gains, pareto_indices
from analysis.runner import SweepRun, run_sweep
from analysis.sweepfile import Cell, Sweep, expand, load_sweep, parse_sweep

__all__ = [
    "Cell",
    "Frontier",
    "Sweep",
    "SweepRun",
    "expand",
    "gains",
    "load_sweep",
    "pareto_indices",
    "parse_sweep",
    "run_sweep",
]
