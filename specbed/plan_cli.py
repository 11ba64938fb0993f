"""`specbed plan`: every policy's verify lengths on a few built-in scheduling scenarios, as a table.

Each scenario is a batch of requests with confidence curves (float64[R, γ]) and a cost table; the table
shows, per policy, the mean verify length ℓ, the batch's verify tokens B = Σ(1 + ℓ), the expected tokens
τ = Σ(1 + Σ_{j≤ℓ} a_j), and Θ = τ · sps(B) in tokens per second. Seeded: the same every run.

`--draft-schedule` prints the batch-size -> draft depth schedule of adaptive DSpark, on a cost table
(`--cost`) or on a whole deployment named as `specbed run` names it (a config and `--set` keys, e.g.
cost.model + cost.gpu), with the vLLM speculative config it implies.

May import: numpy, the standard library, specsched, analysis.draft_schedule (for --draft-schedule).
"""

from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass

import numpy as np

import specsched as S
from specsched.io.errors import InputError
from specsched.registry import specs


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    conf: np.ndarray
    cost: S.CostTable


def scenarios(seed: int = 0) -> list[Scenario]:
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    moe = S.builtin_cost("h200-v4flash").with_draft(0.0015)
    dense = S.builtin_cost("h100-dense8b").with_draft(0.0008)

    def mix(R: int) -> np.ndarray:
        # Confident (math-like), middling (code-like) and hesitant (chat-like) requests.
        kinds = rng.integers(0, 3, size=R)
        means = np.array([0.89, 0.84, 0.72])[kinds]
        return np.clip(rng.normal(means[:, None], 0.08, size=(R, 7)), 0.01, 0.99)

    return [
        Scenario("light", "8 requests, dense 8B on H100: verification is nearly free", mix(8), dense),
        Scenario("busy", "96 requests, dense 8B on H100: past the compute knee", mix(96), dense),
        Scenario("moe-20", "20 requests, V4-Flash-like MoE on H200", mix(20), moe),
        Scenario("moe-200", "200 requests, V4-Flash-like MoE on H200: experts all touched", mix(200), moe),
        Scenario(
            "appendix-a",
            "the paper's Appendix A: c = (0.8, 0.9), sps {1: 1, 2: 0.5, 3: 0.45}",
            np.array([[0.8, 0.9]]),
            S.CostTable.from_points([1, 2, 3], [1.0, 2.0, 1 / 0.45], name="appendix-a"),
        ),
    ]


def decisions(sc: Scenario, policies: list[S.Policy]) -> list[tuple[str, float, int, float, float]]:
    a = np.cumprod(sc.conf, axis=1)
    rows = []
    for pol in policies:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", S.LosslessnessWarning)
            lengths = pol(sc.conf, sc.cost, stale=sc.conf if pol.uses_stale else None)
        B = int((1 + lengths).sum())
        tau = float(len(lengths) + sum(a[r, : lengths[r]].sum() for r in range(len(lengths))))
        rows.append((repr(pol)[7:-1], float(lengths.mean()), B, tau, tau * float(sc.cost.sps(B))))
    return rows


#: extra configurations shown beside every registered policy at its defaults
EXTRA = {"fixed": ({"k": 7},), "threshold": ({"threshold": 0.7},)}


def policies() -> list:
    """Every registered policy (`specsched.registry`) at its defaults, and the EXTRA configurations."""
    out = []
    for name in S.POLICIES:
        out += [S.make_policy(name)] + [S.make_policy(name, **kw) for kw in EXTRA.get(name, ())]
    return out


def render(seed: int = 0) -> str:
    policies_ = policies()
    out = []
    for sc in scenarios(seed):
        R, g = sc.conf.shape
        out.append(f"\n{sc.name}: {sc.about}  (R={R}, γ={g}, cost={sc.cost.name})")
        out.append(f"  {'policy':<34} {'mean ℓ':>7} {'B':>6} {'τ':>8} {'Θ tok/s':>10}")
        rows = decisions(sc, policies_)
        best = max(r[4] for r in rows)
        for name, mean_l, B, tau, theta in rows:
            mark = "  <- best" if theta == best else ""
            out.append(f"  {name:<34} {mean_l:7.2f} {B:6d} {tau:8.2f} {theta:10.1f}{mark}")
    out.append(
        "\nstale-sized policies (" + ", ".join(n for n in S.POLICIES if S.make_policy(n).uses_stale)
        + ") are shown with stale = current confidences; negative controls ("
        + ", ".join(n for n, sp in specs().items() if sp.control) + ") are lossy, shown as a contrast."
    )
    return "\n".join(out)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {value}")
    return value


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(_positive(t.strip()) for t in text.split(",") if t.strip())
    if not sizes:
        raise argparse.ArgumentTypeError("empty list of batch sizes")
    return sizes


def _check_bounds(args: argparse.Namespace) -> None:
    """The bounds `run` enforces on the same quantities (sim.bounds), before any work."""
    from sim.bounds import UPPER_BOUNDS

    for flag, key, values in (
        ("--batch-sizes", "server.max_num_seqs", args.batch_sizes or ()),
        ("--layers", "cost.layers", (args.layers,) if args.layers is not None else ()),
        ("--gamma", "drafter.gamma", (args.gamma,)),
    ):
        bound = UPPER_BOUNDS[key]
        if any(v > bound for v in values):
            raise InputError(f"must be ≤ {bound:g} (as {key} in run), got {max(values)}", field=flag)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specbed plan", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the built-in scenarios")
    parser.add_argument(
        "--draft-schedule",
        action="store_true",
        help="print the batch-size -> draft depth schedule adaptive DSpark settles on (needs --cost)",
    )
    parser.add_argument(
        "config", nargs="?", help="with --draft-schedule: a `specbed run` TOML naming the deployment"
    )
    parser.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="SECTION.KEY=VALUE",
        help="with --draft-schedule: override one config key, as in `specbed run` (cost.model=llama3.1-8b)",
    )  # fmt: skip
    parser.add_argument("--cost", metavar="NAME|FILE", help="cost table: a built-in name or a CSV")
    parser.add_argument("--cost-mode", choices=("step", "linear"), default="step", help="how a CSV is read")
    parser.add_argument("--layers", type=_positive, help="target layers (required with a CSV table)")
    parser.add_argument("--curves", metavar="FILE", help="acceptance curves JSON (default: built-in)")
    parser.add_argument("--gamma", type=_positive, default=7, help="draft positions γ (default 7)")
    parser.add_argument(
        "--batch-sizes", type=_sizes, default=None, metavar="R,R,...", help="batch sizes (default 1..1024)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the schedule as JSON")
    args = parser.parse_args(argv)
    if args.seed < 0:
        raise InputError(f"must be ≥ 0, got {args.seed}", field="--seed")
    _check_bounds(args)
    if args.draft_schedule:
        from analysis import draft_schedule

        if args.batch_sizes is None:
            args.batch_sizes = draft_schedule.BATCH_SIZES
        if args.config is not None or args.sets:  # a deployment, named as `specbed run` names it
            for flag in ("cost", "curves", "layers"):
                if getattr(args, flag) is not None:
                    raise InputError("name the deployment by config or --set, not both", field=f"--{flag}")
            return draft_schedule.run_deployment(args)
        return draft_schedule.run(args)
    if args.config is not None or args.sets:
        parser.error("a config or --set needs --draft-schedule")
    for flag in ("cost", "curves", "json", "layers", "batch_sizes"):
        if getattr(args, flag) is not None:
            parser.error(f"--{flag.replace('_', '-')} needs --draft-schedule")
    print(render(args.seed))
    return 0
