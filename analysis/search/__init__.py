"""`specbed search`: capacity planning with speculation — the cheapest deployment meeting an SLO.

Modules: `space` (SPACE.toml and --traffic), `slo` (the SLO string), `prices` (GPU-hour price tables),
`screen` (the analytical capacity screen), `early` (runs and their early stop), `halving` (successive
halving over fidelities, the cache), `launch` (vllm serve and the winner's TOML), `output` (files),
`cli`. Importing the package imports none of them.

May import: the standard library (the modules say what else they import).
"""
