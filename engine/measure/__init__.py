"""Measurements of the real engine: rollouts, τ and acceptance curves, confidence calibration, cost-table
profiling and the curves export for the simulator (issue 7). Never imports sim."""
