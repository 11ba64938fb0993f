"""`specbed disagg CONFIG [...]`: the old name of `specbed run` for configs with `[[pool]]` tables.

Role: an alias that runs the same code as `specbed run` (`sim.cli`: a fleet's config runs its pools,
prints the fleet's figures and then each pool's, and `--out DIR` writes summary.json, requests.csv and
config.toml), plus its old flag `--json` (print the summary as strict JSON instead of the table).

May import: the standard library, `sim.cli`.
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    from sim.cli import main as run

    return run([a for a in argv if a != "--json"], print_json="--json" in argv)
