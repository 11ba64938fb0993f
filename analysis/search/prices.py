"""GPU-hour prices: the shipped, dated, sourced table (analysis/data/gpu_prices.toml) or the user's.

Role: read and validate a price table, and say which GPU kind (and how many) a candidate config runs on,
so `specbed search` can price it. A table is TOML:

    currency = "USD"                      # optional, shown in reports
    [gpu.h100]                            # one table per GPU kind (lower case, as specsched.GPUS)
    usd_per_hour = 2.69                   # per GPU, > 0
    source = "provider / page / URL"      # required: where the price comes from
    date = "2026-05-22"                   # required: the date the source gives (or says it gives none)

A config's GPU kind is, in order: its `cost.gpu` key (a deployment with `cost.model` and no `cost.gpu`
runs on H100s, `sim.deploy.keys`), the space's `[search.gpus]` mapping from a cost table name to a kind,
or the GPU of a built-in cost table.

May import: the standard library, `specsched` (built-in cost tables, inputs, errors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from specsched.io import inputs
from specsched.io.errors import InputError

DEFAULT = Path(__file__).resolve().parent.parent / "data" / "gpu_prices.toml"
ROW_KEYS = ("usd_per_hour", "source", "date")
MAX_PRICE = 1e6  # per GPU-hour: a fleet's cost must stay finite (1e308 × replicas is inf in every table)


@dataclass(frozen=True)
class Price:
    gpu: str
    usd_per_hour: float
    source: str
    date: str


@dataclass(frozen=True)
class Prices:
    file: str
    currency: str
    rows: dict[str, Price]

    def per_hour(self, gpu: str, *, field: str = "cost.table") -> float:
        row = self.rows.get(gpu)
        if row is None:
            raise InputError(
                f"no price for GPU {gpu!r} (priced: {', '.join(sorted(self.rows)) or 'none'}); add a "
                f"[gpu.{gpu}] row to a --prices table",
                file=self.file,
                field=field,
            )
        return row.usd_per_hour


def load_prices(path: str | Path | None = None) -> Prices:
    """The price table at `path` (None: the shipped one); InputError naming the file and field."""
    path = Path(path) if path is not None else DEFAULT
    file = str(path)
    data = inputs.load_toml(path, what="price table")
    for key in data:
        if key not in ("currency", "gpu"):
            raise InputError("unknown key (known: currency, gpu)", file=file, field=key)
    currency = data.get("currency", "USD")
    if not isinstance(currency, str) or not currency.strip():
        raise InputError("expected a currency name", file=file, field="currency")
    table = data.get("gpu")
    if not isinstance(table, dict) or not table:
        raise InputError("expected [gpu.NAME] tables (one per GPU kind)", file=file, field="gpu")
    rows = {}
    for gpu, row in table.items():
        rows[gpu.lower()] = _row(gpu, row, file)
    return Prices(file, currency, rows)


def _row(gpu: str, row, file: str) -> Price:
    where = f"gpu.{gpu}"
    if not isinstance(row, dict):
        raise InputError("expected a table with usd_per_hour, source and date", file=file, field=where)
    for key in row:
        if key not in ROW_KEYS:
            raise InputError(f"unknown key (known: {', '.join(ROW_KEYS)})", file=file, field=f"{where}.{key}")
    price = row.get("usd_per_hour")
    if (
        isinstance(price, bool)
        or not isinstance(price, (int, float))
        or not (math.isfinite(price) and 0 < price <= MAX_PRICE)
    ):
        raise InputError(
            f"expected a price in (0, {MAX_PRICE:g}] per GPU-hour, got {price!r}",
            file=file,
            field=f"{where}.usd_per_hour",
        )
    for key in ("source", "date"):
        value = row.get(key)
        if not isinstance(value, str) or not value.strip():
            raise InputError(
                "required: every price names its source and date", file=file, field=f"{where}.{key}"
            )
    return Price(gpu.lower(), float(price), row["source"], row["date"])


def gpu_kind(config: dict, gpus: dict[str, str] | None = None) -> str:
    """The GPU kind a resolved config runs on (see the module docstring); InputError when unknown."""
    import specsched

    priced = config.get("cost", {})
    if isinstance(priced.get("gpu"), str):
        return priced["gpu"].lower()
    if priced.get("model") is not None:  # a deployment names its GPU; none given is an H100
        return "h100"
    cost = str(priced.get("table"))
    if gpus and cost in gpus:
        return gpus[cost].lower()
    for name in specsched.BUILTIN_COSTS:
        if cost == name:
            return specsched.builtin_gpu(name)
    raise InputError(
        f"cannot tell which GPU cost table {cost!r} runs on: map it in the space's [search.gpus] table "
        f'(e.g. "{cost}" = "h100")',
        field="cost.table",
    )


def gpus_per_replica(config: dict) -> int:
    """GPUs behind one replica: server.tp, else the built-in table's own count, else 1."""
    import specsched

    server = config.get("server", {})
    if server.get("tp") is not None:
        return int(server["tp"])
    cost = config.get("cost", {}).get("table")
    if cost in specsched.BUILTIN_COSTS:
        return specsched.builtin_gpus_per_replica(cost)
    return 1


def gpu_count(config: dict) -> int:
    """GPUs a whole deployment uses before it runs (replicas × GPUs per replica; a summary's `gpus`
    is the simulator's own count and wins when there is one)."""
    return int(config.get("server", {}).get("replicas", 1)) * gpus_per_replica(config)
