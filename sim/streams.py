"""The simulator's named random streams: one Generator per name, spawned from one SeedSequence.

Role: the one place the stream names and their order live, so every way of building a run (`sim.run`,
`sim.deploy.prepare`) draws the same numbers from the same seed. A new stream is appended, never inserted,
so existing ones keep their draws.

May import: numpy.
"""

from __future__ import annotations

import numpy as np

STREAMS = (
    "arrivals",
    "lengths",
    "domains",
    "think",
    "latent",
    "acceptance",
    "confidence",
    "model",
    "verify",
    "router",
)


def stream_rngs(seed: int) -> dict[str, np.random.Generator]:
    """{stream name: Generator}, spawned from `numpy.random.SeedSequence(seed)` in `STREAMS` order."""
    seeds = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: np.random.default_rng(s) for name, s in zip(STREAMS, seeds)}
