"""Regenerate the example inputs under examples/ — every file made by specbed itself, nothing measured.

    python -m examples.make_examples            # rewrites examples/vllm/* and examples/burstgpt-sample.csv

Role: give every README command a small input to run on from a fresh clone. Two small simulator runs
(Llama-3.1-8B on one H100, 80 requests; without speculation and with EAGLE-3 K=3) are exported in the shapes
vLLM writes: the first as a `vllm bench serve --save-result --save-detailed` file (`bench_result.json`:
`specbed vllm export` plus the per-request `input_lens`, `output_lens`, `ttfts`, `itls`), the second as a
`/metrics` scrape pair of its spec-decode counters (`before.prom`, `after.prom`) and a vLLM v1 log of them
(`v1_eagle3.log`). `runs.csv` + `workloads.json` are eight runs (two models, two small inference-perf
profiles, two token budgets) in `specbed vllm validate`'s columns whose "measured" figures are the
simulator's own prediction times a seeded ±3 % factor (so they test the plumbing, not the model: real runs
are in ../shared/real-vllm). `burstgpt-sample.csv` is a synthetic trace in BurstGPT's columns;
`ray-small.toml` (by hand) a small config for `--backend ray`. Same seed, same files.

May import: numpy, the standard library, `sim`, `specsched`, `bridge`, `validate`, `traces`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
VLLM = HERE / "vllm"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
RUN_SETS = [
    "cost.model=llama3.1-8b",
    "cost.gpu=h100",
    "drafter.name=eagle3",
    "drafter.model=eagle3",
    "drafter.gamma=3",
    "policy.name=fixed",
    "policy.k=3",
    "workload.rate=4",
    "workload.num_requests=80",
    "workload.input_tokens=512",
    "workload.output_tokens=64",
    "workload.input_dist=lognormal",
    "workload.output_dist=lognormal",
    "workload.domain=chat",
]
PROFILES = {
    "chat-small": {
        "stages": [{"rate": 2, "duration": 30}, {"rate": 6, "duration": 30}],
        "data": {
            "type": "shared_prefix",
            "shared_prefix": {
                "num_unique_system_prompts": 4,
                "num_users_per_system_prompt": 4,
                "system_prompt_len": 256,
                "question_len": 256,
                "output_len": 128,
            },
        },
    },
    "code-small": {
        "stages": [{"rate": 3, "duration": 40}],
        "data": {
            "type": "shared_prefix",
            "shared_prefix": {
                "num_unique_system_prompts": 2,
                "num_users_per_system_prompt": 8,
                "system_prompt_len": 512,
                "question_len": 512,
                "output_len": 256,
            },
        },
    },
}


def bench_result(out: Path, run_dir: Path, summary: dict, req: dict) -> None:
    """vllm bench serve's --save-result --save-detailed file of the run (gaps: its per-request TPOT)."""
    from bridge.bench import export_vllm_bench

    doc = export_vllm_bench(run_dir)
    done = ~np.isnan(req["finish_s"])
    outs = req["output_tokens"][done].astype(int)
    tpot = np.nan_to_num(req["tpot_s"][done])
    doc.update(
        model_id=MODEL,
        request_rate=4.0,
        input_lens=req["input_tokens"][done].astype(int).tolist(),
        output_lens=outs.tolist(),
        ttfts=req["ttft_s"][done].tolist(),
        itls=[[round(float(t), 6)] * max(int(n) - 1, 0) for t, n in zip(tpot, outs)],
    )
    (out / "bench_result.json").write_text(json.dumps(doc) + "\n")


def prom_pair(out: Path, summary: dict) -> None:
    """A /metrics scrape at start-up (one warm-up batch) and after the run: vLLM v1's spec-decode counters."""
    per_pos = [int(x) for x in summary["spec_accepted_per_pos"]]
    drafts, drafted, accepted = (
        int(summary[k]) for k in ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")
    )
    warm = (4, 12, [3, 2, 1])
    for name, (d, t, pos) in (
        ("before.prom", warm),
        ("after.prom", (warm[0] + drafts, warm[1] + drafted, [a + b for a, b in zip(warm[2], per_pos)])),
    ):
        label = f'engine="0",model_name="{MODEL}"'
        lines = [
            "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            f"vllm:spec_decode_num_drafts_total{{{label}}} {float(d)}",
            "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
            f"vllm:spec_decode_num_draft_tokens_total{{{label}}} {float(t)}",
            "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
            f"vllm:spec_decode_num_accepted_tokens_total{{{label}}} {float(sum(pos))}",
            "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
            *(
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{label},position="{i}"}} {float(a)}'
                for i, a in enumerate(pos)
            ),
        ]
        (out / name).write_text("\n".join(lines) + "\n")
    del accepted


def v1_log(out: Path, summary: dict) -> None:
    """vLLM v1's periodic SpecDecoding log line for the run's counters (one interval)."""
    per_pos = [int(x) for x in summary["spec_accepted_per_pos"]]
    d, t, a = (int(summary[k]) for k in ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens"))
    secs = 10.0
    rates = ", ".join(f"{p / d:.3f}" for p in per_pos)
    line = (
        "(APIServer pid=1) INFO 12-02 06:00:10 [metrics.py:98] SpecDecoding metrics: "
        f"Mean acceptance length: "
        f"{1 + a / d:.2f}, Accepted throughput: {a / secs:.2f} tokens/s, Drafted throughput: {t / secs:.2f} "
        f"tokens/s, Accepted: {a} tokens, Drafted: {t} tokens, Per-position acceptance rate: {rates}, "
        f"Avg Draft acceptance rate: {100 * a / t:.1f}%"
    )
    (out / "v1_eagle3.log").write_text(line + "\n")


def runs_table(out: Path) -> None:
    """runs.csv + workloads.json: two models × two profiles × two token budgets on one H100 (8 runs, what
    `specbed vllm calibrate` needs at least); 'measured' = the simulator's prediction × a seeded ±3 %
    factor."""
    from sim.inference_perf import load_profiles
    from specsched.price.knobs import shipped_knobs
    from specsched.price.vllm import VllmSpec
    from validate.predict import simulate_run
    from validate.runs import METRICS, MeasuredRun

    doc = {"about": "project-made profiles for the examples (not measured)", "workloads": PROFILES}
    (out / "workloads.json").write_text(json.dumps(doc, indent=1) + "\n")
    profiles = load_profiles(out / "workloads.json")
    head = (
        "exp_id,folder,model,hardware,tp,dp,workload,max_num_batched_tokens,cpu_offload,gpu_mem_util,"
        "precision," + ",".join(f"actual_{m}" for m in METRICS)
    )
    rows, rng = [head], np.random.default_rng(np.random.SeedSequence(35))
    models = {"llama3.1-8b": MODEL, "qwen3-8b": "Qwen/Qwen3-8B"}
    cells = [(m, p, t) for m in models for p in PROFILES for t in (2048, 8192)]
    for i, (key, name, tokens) in enumerate(cells, start=1):
        spec = VllmSpec(
            model=key, gpu="h100", tp=1, max_num_seqs=128, max_num_batched_tokens=tokens, max_model_len=4096
        )
        folder = f"{i}-{key.replace('.', '-')}-tp1-{name}-{tokens}"
        run = MeasuredRun(
            exp_id=str(i),
            folder=folder,
            model=models[key],
            hardware="H100",
            spec=spec,
            profile=name,
            actual={},
            where="",
            workload=None,
        )
        pred = simulate_run(run, shipped_knobs("h100"), profiles)["predicted"]
        factor = float(np.exp(rng.normal(0.0, 0.03)))
        cols = ",".join(f"{pred[m] * factor:.3f}" for m in METRICS)
        rows.append(f"{i},{folder},{models[key]},H100,1,,{name},{tokens},,,FP16,{cols}")
    (out / "runs.csv").write_text("\n".join(rows) + "\n")


def burstgpt(out: Path) -> None:
    """A 300-request synthetic trace in BurstGPT's columns (two models, two log types)."""
    rng = np.random.default_rng(np.random.SeedSequence(35))
    t = np.cumsum(rng.exponential(0.5, 300))
    ins = rng.lognormal(6.0, 0.8, 300).astype(int) + 1
    outs = rng.lognormal(5.0, 0.7, 300).astype(int) + 1
    models = np.where(rng.random(300) < 0.6, "ChatGPT", "GPT-4")
    logs = np.where(rng.random(300) < 0.8, "Conversation log", "API log")
    lines = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    lines += [f"{a:.0f},{m},{i},{o},{i + o},{lg}" for a, m, i, o, lg in zip(t, models, ins, outs, logs)]
    (out / "burstgpt-sample.csv").write_text("\n".join(lines) + "\n")


def main() -> None:
    import tempfile

    from sim.cli import main as run_main
    from sim.config_io import load_config
    from sim.run import simulate

    VLLM.mkdir(parents=True, exist_ok=True)
    res = simulate(load_config(None, RUN_SETS))  # the speculative run: the counters
    plain = [*RUN_SETS, "drafter.name=none", "policy.name=ar"]  # the bench file: no speculation (validate's)
    plain = [s for s in plain if not s.startswith(("drafter.model", "drafter.gamma", "policy.k"))]
    with tempfile.TemporaryDirectory() as tmp:
        assert run_main([*(a for s in plain for a in ("--set", s)), "--quiet", "--out", tmp]) == 0
        base = simulate(load_config(None, plain))
        bench_result(VLLM, Path(tmp), base.summary, base.requests)
    prom_pair(VLLM, res.summary)
    v1_log(VLLM, res.summary)
    runs_table(VLLM)
    burstgpt(HERE)
    print(
        f"wrote {VLLM}/ bench_result.json before.prom after.prom v1_eagle3.log runs.csv workloads.json, "
        f"{HERE}/burstgpt-sample.csv"
    )


if __name__ == "__main__":
    main()
