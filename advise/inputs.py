"""The inputs of `specbed advise`: the deployment as `vllm serve` flags, the traffic, the measured run.

Role: turn what a serving engineer has — `vllm serve` flags (`--model`, `--tensor-parallel-size`,
`--max-num-seqs`, `--max-num-batched-tokens`, `--gpu-memory-utilization`, `--speculative-config`), the GPU,
and the traffic (a `vllm bench serve --save-result` file, a trace file or built-in trace name, or an
inference-perf profile) — into the simulator's `--set` vocabulary: `Deployment.sets()` names the `[cost]`
deployment (`sim.deploy.cost`), `Traffic.sets()` the request lengths (closed loop: the load is swept, the
lengths are the traffic's). A measured run (a runs.csv row with its profiles, or the bench file itself) is
read with `validate.runs`.

May import: numpy, the standard library, `sim`, `specsched`, `validate`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from sim.bounds import UPPER_BOUNDS
from specsched.io import inputs as inp
from specsched.io.errors import InputError
from specsched.price import find_model, get_gpu

#: model families that ship multi-token-prediction heads vLLM serves as `method: "mtp"` (their config.json
#: has num_nextn_predict_layers > 0): DeepSeek-V3/R1, GLM-4.5, MiMo, Qwen3-Next
MTP_FAMILIES = ("deepseek-v3", "deepseek-r1", "deepseek_v3", "glm-4.5", "mimo", "qwen3-next")


@dataclass(frozen=True)
class Deployment:
    """One `vllm serve` deployment. model: catalogue name or HF id; gpu: catalogue GPU key; spec: the
    existing `--speculative-config` (None: none)."""

    model: str
    gpu: str
    tp: int
    max_num_seqs: int
    max_num_batched_tokens: int
    gpu_memory_utilization: float
    spec: dict | None

    def sets(self) -> list[str]:
        """The deployment as `--set` lines (the `[cost]` deployment kind)."""
        return [
            f"cost.model={self.model}",
            f"cost.gpu={self.gpu}",
            f"server.tp={self.tp}",
            f"server.max_num_seqs={self.max_num_seqs}",
            f"server.max_num_batched_tokens={self.max_num_batched_tokens}",
            f"cost.gpu_memory_utilization={self.gpu_memory_utilization}",
        ]

    @property
    def has_mtp(self) -> bool:
        return any(f in self.model.lower() for f in MTP_FAMILIES)

    @property
    def k(self) -> int:
        """num_speculative_tokens of the existing config, else 3 (vLLM's documented EAGLE example)."""
        return int((self.spec or {}).get("num_speculative_tokens") or 3)


def deployment(args) -> Deployment:
    """The Deployment of parsed flags (InputError naming the flag)."""
    if find_model(args.model) is None:
        raise InputError(
            f"model {args.model!r} is not in the catalogue (specsched.price.models)", field="--model"
        )
    gpu = get_gpu(args.gpu, field="--gpu").key
    for flag, v in (
        ("--tensor-parallel-size", args.tp),
        ("--max-num-seqs", args.max_num_seqs),
        ("--max-num-batched-tokens", args.max_num_batched_tokens),
    ):
        if not 1 <= v <= 1_048_576:
            raise InputError(f"must be in [1, 1048576], got {v}", field=flag)
    if not 0.0 < args.gpu_memory_utilization <= 1.0:
        raise InputError(
            f"must be in (0, 1], got {args.gpu_memory_utilization}", field="--gpu-memory-utilization"
        )
    spec = None
    if args.speculative_config:
        try:
            spec = json.loads(args.speculative_config)
        except ValueError as err:
            raise InputError(f"is not JSON: {err}", field="--speculative-config") from None
        k = spec.get("num_speculative_tokens", 3) if isinstance(spec, dict) else None
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 16:
            raise InputError(
                "must be a JSON object with num_speculative_tokens in [1, 16]", field="--speculative-config"
            )
    return Deployment(
        args.model,
        gpu,
        args.tp,
        args.max_num_seqs,
        args.max_num_batched_tokens,
        args.gpu_memory_utilization,
        spec,
    )


@dataclass(frozen=True)
class Traffic:
    """The traffic's request lengths: a trace (`trace`: sampled from it) or lognormal with the measured
    means and coefficients of variation (tokens); `rate`: its mean arrival rate (requests/s, None unknown);
    `source`: what it came from."""

    source: str
    input_mean: float
    output_mean: float
    input_cv: float
    output_cv: float
    rate: float | None = None
    trace: str | None = None

    def sets(self) -> list[str]:
        if self.trace is not None:
            return [f"workload.trace={self.trace}", "workload.input_dist=trace", "workload.output_dist=trace"]
        return [
            f"workload.input_tokens={max(int(round(self.input_mean)), 1)}",
            f"workload.output_tokens={max(int(round(self.output_mean)), 1)}",
            "workload.input_dist=lognormal",
            "workload.output_dist=lognormal",
            f"workload.input_cv={max(self.input_cv, 0.01):.4g}",
            f"workload.output_cv={max(self.output_cv, 0.01):.4g}",
        ]


def _lengths(source: str, inputs: np.ndarray, outputs: np.ndarray, rate: float | None, **kw) -> Traffic:
    def cv(x: np.ndarray) -> float:
        return float(np.std(x) / max(np.mean(x), 1e-9))

    return Traffic(source, float(inputs.mean()), float(outputs.mean()), cv(inputs), cv(outputs), rate, **kw)


def traffic(args, profiles: dict) -> Traffic:
    """The Traffic of --traffic FILE|NAME or --profile NAME (default: the measured run's profile)."""
    if args.traffic and args.traffic.lower().endswith(".json"):  # a vllm bench serve --save-result file
        raw = inp.load_json(args.traffic, what="vllm bench result", nonfinite=True)
        if not isinstance(raw, dict) or not raw.get("input_lens") or not raw.get("output_lens"):
            raise InputError(
                "needs input_lens and output_lens (vllm bench serve --save-result --save-detailed)",
                file=args.traffic,
                field="input_lens",
            )
        try:
            ins, outs = (np.asarray(raw[k], dtype=float) for k in ("input_lens", "output_lens"))
        except (TypeError, ValueError):
            raise InputError("must be lists of numbers", file=args.traffic, field="input_lens") from None
        for name, lens in (("input_lens", ins), ("output_lens", outs)):
            if ins.shape != outs.shape or lens.ndim != 1 or not np.all(np.isfinite(lens) & (lens >= 0)):
                raise InputError("must be equal-length lists of numbers ≥ 0", file=args.traffic, field=name)
            most = UPPER_BOUNDS[f"workload.{name.split('_')[0]}_tokens"]  # a request's bound, as sim's
            if np.any(lens > most):
                raise InputError(f"a length over {most:,} tokens", file=args.traffic, field=name)
        rate = raw.get("request_rate")
        rate = float(rate) if isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0 else None
        return _lengths(args.traffic, np.maximum(ins, 1), np.maximum(outs, 1), rate)
    if args.traffic:  # a trace file or built-in trace name: lengths sampled from it (sim.workload)
        import traces

        table = traces.load(args.traffic)
        if len(table) == 0:
            raise InputError("the trace has no requests", file=args.traffic, field="--traffic")
        dur = float(table.arrival_s.max() - table.arrival_s.min()) if len(table) > 1 else 0.0
        rate = len(table) / dur if dur > 0 else None
        tr = _lengths(args.traffic, table.input_tokens.astype(float), table.output_tokens.astype(float), rate)
        return Traffic(
            tr.source, tr.input_mean, tr.output_mean, tr.input_cv, tr.output_cv, rate, args.traffic
        )
    name = args.profile
    if name is None:
        raise InputError(
            "name the traffic: --traffic FILE|TRACE, or --runs/--row with --workloads", field="--traffic"
        )
    if name not in profiles:
        raise InputError(
            f"unknown profile {name!r} (profiles: {', '.join(sorted(profiles))})", field="--profile"
        )
    from sim.inference_perf import generate

    wl, _ = generate(profiles[name], seed=0)
    prof = profiles[name]
    rate = sum(r * d for r, d in prof.stages) / max(sum(d for _, d in prof.stages), 1e-9)
    return _lengths(
        f"inference-perf profile {name}", wl.input_tokens.astype(float), wl.output_tokens.astype(float), rate
    )


def measured_run(args, dep: Deployment):
    """(the MeasuredRun, profiles) of --runs/--row (or a bench file given as --measured), None if none."""
    from sim.inference_perf import load_profiles
    from specsched.price.vllm import VllmSpec
    from validate.runs import read_bench, read_runs

    profiles = load_profiles(args.workloads) if args.workloads else {}
    if args.measured:
        spec = VllmSpec(
            model=dep.model,
            gpu=dep.gpu,
            tp=dep.tp,
            max_num_seqs=dep.max_num_seqs,
            max_num_batched_tokens=max(dep.max_num_batched_tokens, dep.max_num_seqs),
            max_model_len=None,
        )
        return read_bench(args.measured, spec), profiles
    if args.runs is None:
        return None, profiles
    if not args.workloads:
        raise InputError("--runs needs --workloads PROFILES.json (the runs' traffic)", field="--workloads")
    runs = read_runs(args.runs, profiles)
    if args.row is None and len(runs) > 1:
        raise InputError(f"holds {len(runs)} runs: pick one with --row EXP_ID", file=args.runs, field="--row")
    chosen = [r for r in runs if args.row is None or str(r.exp_id) == str(args.row)]
    if not chosen:
        raise InputError(f"no run with exp_id {args.row}", file=args.runs, field="--row")
    _same_model(chosen[0], dep, args.runs)
    return chosen[0], profiles


def _same_model(run, dep: Deployment, file: str) -> None:
    """InputError when the measured run served another model or GPU than the deployment's flags name."""
    want, got = find_model(dep.model).name, find_model(run.spec.model).name
    if want != got or run.spec.gpu != dep.gpu:
        raise InputError(
            f"the measured run served {got} on {run.spec.gpu}, the flags name {want} on {dep.gpu}",
            file=file,
            field="--row",
        )
