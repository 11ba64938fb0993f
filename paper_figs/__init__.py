"""paper_figs — one script per figure of the DSpark paper, regenerated with specbed's simulator.

`python -m paper_figs.<name> [--tiny] [--out DIR] [--jobs N]` for name in fig2_acceptance, table1_tau,
fig7_pareto, fig8_budget, crossover: each writes DIR/<name>.png and DIR/summary.json.
`python -m paper_figs.golden [--update]` checks (rewrites) the tiny-mode goldens in paper_figs/golden/.
Our numbers beside the paper's, and every gap: paper_figs/REPRODUCTION.md.
"""
