"""The simulator checked against measured vLLM runs (`specbed validate`, `specbed cost calibrate`).

Beside `twin/` (engine vs simulator), this room holds simulator vs real vLLM:
- `validate.runs`: the measured-runs CSV (and a `vllm bench serve` result) read into `MeasuredRun`s.
- `validate.predict`: each run's traffic regenerated and simulated; predicted vs measured latency.
- `validate.calibrate`: the vLLM step knobs fitted to the runs (MAP with physical priors), scored held out.
- `validate.cli`, `validate.calibrate_cli`: the commands.
Data (measured cases shipped with the package) lives in `validate/data/`.

May import: numpy, the standard library, `sim`, `specsched`, matplotlib (the plot only). Never `engine`,
torch, `analysis` or `paper_figs` (tests/test_layering.py).
"""
