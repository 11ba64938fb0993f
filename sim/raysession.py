"""Ray, the optional extra: import it, check an address, hold a session (local instance or a cluster).

Role: what every Ray user of the project shares — `specbed run --backend ray` (`sim.shard`) and sweeps
(`analysis.runner`): a missing Ray or an unreachable address is one InputError line (exit 2), never
minutes of Ray's own retries or a traceback. A local instance has no dashboard and reaches nothing
beyond localhost.

May import: the standard library, `specsched.io.errors`; `ray` lazily (inside the functions).
"""

from __future__ import annotations

import contextlib
import socket

from specsched.io.errors import InputError


def import_ray():
    try:
        import ray
    except ImportError:
        raise InputError(
            "the Ray backend needs the optional dependency ray (pip install 'specbed[ray]')",
            field="--backend",
        ) from None
    return ray


def probe(address: str) -> None:
    """Fail fast (5 s) on a Ray address nothing listens on; ray.init itself retries for minutes."""
    if address in ("auto", "local"):
        return
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(
            f"expected host:port, ray://host:port, auto or local; got {address!r}", field="--address"
        )
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, OverflowError) as err:  # OverflowError: a port above 65535
        reason = getattr(err, "strerror", None) or err
        raise InputError(f"cannot reach Ray at {address}: {reason}", field="--address") from None


@contextlib.contextmanager
def ray_session(cpus: int, address: str | None):
    """Ray connected for the block: a cluster at `address`, or a local instance with `cpus` CPUs on this
    machine (shut down afterwards). An already initialized Ray is used as is."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    if address is not None:
        probe(address)
    kwargs = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
    try:
        if address is None:
            ray.init(num_cpus=cpus, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    except Exception as err:  # ConnectionError, RuntimeError, ...: one line for the user
        raise InputError(
            f"cannot start or reach Ray: {' '.join(str(err).split())[:300]}",
            field="--address" if address else "--backend",
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()
