"""specbed's discrete-event serving simulator (simpy): replicas, continuous batching, speculative steps.

Public API (imported lazily, so `import sim.curves` does not pull in simpy):
- `simulate(config) -> SimResult`: one run, numpy arrays and a summary dict, no files written.
- `SimConfig` (and its sections in `sim.config`), `load_config(path=None, overrides=())`.
- `specbed run` is `sim.cli.main`.

Every verify length comes from the one `specsched` policy; acceptance truth and confidence estimates
come from `sim.acceptance`. Imports numpy, simpy, the standard library, specsched and traces; never torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["SimConfig", "SimResult", "load_config", "simulate"]

if TYPE_CHECKING:
    from sim.config import SimConfig
    from sim.config_io import load_config
    from sim.run import SimResult, simulate

_LAZY = {
    "SimConfig": "sim.config",
    "load_config": "sim.config_io",
    "SimResult": "sim.run",
    "simulate": "sim.run",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sim' has no attribute {name!r}")
