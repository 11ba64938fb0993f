"""Domain names shared by the engine and the simulator, and the one place that aliases them.

Role: the simulator names its workload domains chat / math / code (index order `DOMAINS`, used by traces,
curves files and metrics); the engine's byte-level corpus names its domains code / prose / math
(`ENGINE_DOMAINS`, the order it trains and measures in). The engine's "prose" is the simulator's "chat";
every translation between the two goes through `sim_domain` / `engine_domain` (or the two dicts).

May import: the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

from specsched.io.errors import InputError

DOMAINS = ("chat", "math", "code")
ENGINE_DOMAINS = ("code", "prose", "math")
ENGINE_TO_SIM = {"code": "code", "prose": "chat", "math": "math"}
SIM_TO_ENGINE = {sim: eng for eng, sim in ENGINE_TO_SIM.items()}


def sim_domain(engine_name: str) -> str:
    """The simulator's name of an engine domain ("prose" -> "chat")."""
    if engine_name not in ENGINE_TO_SIM:
        raise InputError(
            f"unknown engine domain {engine_name!r} (expected one of {', '.join(ENGINE_DOMAINS)})",
            field="domain",
        )
    return ENGINE_TO_SIM[engine_name]


def engine_domain(sim_name: str) -> str:
    """The engine's name of a simulator domain ("chat" -> "prose")."""
    if sim_name not in SIM_TO_ENGINE:
        raise InputError(
            f"unknown domain {sim_name!r} (expected one of {', '.join(DOMAINS)})", field="domain"
        )
    return SIM_TO_ENGINE[sim_name]
