"""specbed traces: production trace replay and synthetic traffic.

One normalized request table (`RequestTable`), loaders for public LLM-serving traces (Azure 2023/2024,
BurstGPT, Mooncake, Vidur, any CSV with a column mapping), pure transformations, synthetic arrival
and length generators, and a traffic model fitted to a trace. The simulator replays
`traces.load(spec)` where spec is a file path or a built-in name ("azure2023-conv", "azure2023-code").
Imports: numpy, the standard library, specsched.io.errors; pyarrow only lazily (Parquet).
"""

from traces.export import save
from traces.formats import FORMATS, TIME_UNITS
from traces.loader import BUILTIN_TRACES, TraceOrderWarning, builtin_path, builtin_trace, load
from traces.stats import describe
from traces.synthetic import (
    TrafficModel,
    fit,
    fixed_lengths,
    gamma_arrivals,
    lognormal_lengths,
    poisson_arrivals,
    sample_lengths,
    synthetic_table,
    uniform_lengths,
)
from traces.table import RequestTable
from traces.transform import clip, filter_rows, head, merge, sample, scale_rate, to_rate, window

__all__ = [
    "BUILTIN_TRACES",
    "FORMATS",
    "TIME_UNITS",
    "RequestTable",
    "TraceOrderWarning",
    "TrafficModel",
    "builtin_path",
    "builtin_trace",
    "clip",
    "describe",
    "filter_rows",
    "fit",
    "fixed_lengths",
    "gamma_arrivals",
    "head",
    "load",
    "lognormal_lengths",
    "merge",
    "poisson_arrivals",
    "sample",
    "sample_lengths",
    "save",
    "scale_rate",
    "synthetic_table",
    "to_rate",
    "uniform_lengths",
    "window",
]
