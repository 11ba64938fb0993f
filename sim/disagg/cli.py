"""`specbed disagg CONFIG [...]`: the old name of `specbed run` for configs with `[[pool]]` tables.

Role: an alias that runs the same code as `specbed run` (`sim.cli`: a fleet's config runs its pools,
prints the fleet's figures and then each pool's, `--out DIR` writes summary.json, requests.csv and
config.toml, `--json FILE` the summary as strict JSON, `-` for standard output).

May import: the standard library, `sim.cli`.
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    from sim.cli import main as run

    return run(argv)
