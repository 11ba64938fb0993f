"""Predicted speedup of EAGLE-3 (chain of 3) on Llama-3.1-8B / one H100 over no speculation at batch 2–64,
from the catalogue, the shipped no-speculation knobs, the engine's sourced step terms and the three shipped
speculative knobs (`specsched.spec_knobs`: op_s, mask_eff, host_scale — fitted by `specbed cost calibrate
--spec` on the dataset's train half, which holds these nine batches; the leave-one-source-out figures of
that command are the out-of-sample ones), beside the EAGLE-3 paper's measurements (issue 37).

A step of B decoding requests, each holding `CONTEXT` KV tokens:
    no speculation:  target step at B tokens (the vLLM deployment's catalogue cost, CUDA-graph padded)
    speculative:     draft step (`drafter.model = eagle3`, `drafter.engine`: the first pass over the B·4
                     verified positions, 2 more over B, the engine's exposed host work) + target step at
                     B·(1 + 3) tokens + rejection sampling + the drafter's KV reads + the verify
                     kernel's (FlashInfer custom mask: KV at eta_kv · mask_eff)
    speedup = E[tokens per step] · no-spec step / speculative step.
Acceptance, two settings (the bench says which produced which column):
    flat:  0.8 at every position (the issue's setting), E = 1 + 0.8 + 0.8² + 0.8³ = 2.952;
    vLLM:  measured per-position survival 0.7296, 0.5208, 0.3545 (E = 2.605): vLLM's EAGLE-3 regression
           baseline, Llama-3.1-8B-Instruct + RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3, MT-bench
           (philschmid/mt-bench, 80 prompts), T = 0, 3 speculative tokens
           (vllm tests/v1/spec_decode/test_acceptance_length.py) — an EAGLE-3 drafter, not the paper's own.

Published (EAGLE-3 paper, arXiv:2503.01840v3, Table 3, read in full this session): SGLang v0.4.4, one
H100, LLaMA-Instruct-3.1-8B, MT-bench, chain of 3 (no tree), throughput over SGLang without speculation.

`--host` (`python -m bench.bench_spec_price --host`) also measures the host loops that price SGLang's
exposed per-request work (`specsched.price.spec_engine.SGLANG_HOST_REQ_S` / `_TOKEN_S` /
`SGLANG_NOSPEC_REQ_S`):
a model, written here, of v0.4.4's scheduler and EAGLE-verify Python on stub requests (below), timed at
4 and 64 requests and 1 and γ + 1 emitted tokens, the fastest of 40 trials each.

May import: numpy, torch (the --host loops only), the standard library, sim, specsched.
"""

from __future__ import annotations

import dataclasses
import gc
import pickle
import sys
import time

import numpy as np

from specsched import DraftCost
from specsched.price import get_gpu, get_model
from specsched.price.draft_shape import drafter_shape, own_draft_cost
from specsched.price.knobs import shipped_knobs
from specsched.price.spec_engine import (
    ENGINES,
    SGLANG_HOST_REQ_S,
    SGLANG_HOST_STEP_S,
    SGLANG_HOST_TOKEN_S,
    SGLANG_NOSPEC_REQ_S,
    SGLANG_OVERLAP_GAIN_S,
)
from specsched.price.vllm import VllmSpec, cost_table
from specsched.spec_knobs import shipped_spec_knobs

GAMMA, CONTEXT = 3, 512
#: batch -> EAGLE-3 speedup, arXiv:2503.01840v3 Table 3 (SGLang v0.4.4, H100, chain of 3)
PUBLISHED = {2: 1.81, 4: 1.82, 8: 1.62, 16: 1.48, 24: 1.39, 32: 1.32, 48: 1.38, 56: 1.34, 64: 1.38}
#: per-position survival (cumulative acceptance) settings
FLAT = tuple(0.8 ** (i + 1) for i in range(GAMMA))
VLLM_MEASURED = (0.7296, 0.5208, 0.3545)
#: the previous pricing of SGLang's exposed host work: #5608's whole gain a step, nothing per request
SGLANG_STEP_ONLY = dataclasses.replace(
    ENGINES["sglang"],
    host_step_s=SGLANG_OVERLAP_GAIN_S,
    host_request_s=0.0,
    host_token_s=0.0,
    graph_max_bs=None,
)


def speedups(
    preset: str = "eagle3",
    engine="sglang",
    survival=VLLM_MEASURED,
    *,
    gamma: int = GAMMA,
    context: int = CONTEXT,
    op_s: float | None = None,
    host_scale: float | None = None,
) -> dict[int, float]:
    """{batch: speedup} for `preset` on Llama-3.1-8B / H100 with the shipped knobs; engine (a name or an
    `ServingEngine`) None: the pricing before engines (every draft pass over the drafting requests, no host
    terms). Each drafting request emits E = 1 + Σ survival tokens a step. op_s / host_scale None: the
    shipped speculative knobs (`specsched.spec_knobs`, fitted by `specbed cost calibrate --spec`)."""
    spec = VllmSpec(model="llama3.1-8b", gpu="h100", max_num_seqs=256)
    knobs = shipped_knobs("h100")
    table = cost_table(spec, knobs)
    target, gpu = get_model("llama3.1-8b"), get_gpu("h100")
    shape = drafter_shape(preset, target)
    tokens = 1.0 + sum(survival[:gamma])
    own, draft_kv = own_draft_cost(shape, target, gpu, knobs, gamma, 256 * gamma, engine=engine, op_s=op_s,
                                   emitted=tokens, host_scale=host_scale)  # fmt: skip
    out = {}
    for b in PUBLISHED:
        ctx = b * context
        ar = float(table.step_seconds(b, b, ctx))
        verify = float(table.step_seconds(b * (1 + gamma), b, ctx))
        draft = float(own.price(np.array([b * gamma]), np.array([b]), np.array([gamma]), table)[0])
        out[b] = tokens * ar / (draft + verify + (draft_kv + own.verify_kv_s) * ctx)
    return out


def old_speedups(survival=FLAT) -> dict[int, float]:
    """The first pricing: a draft pass = one target layer's share of the step, no head, no sampling."""
    table = cost_table(VllmSpec(model="llama3.1-8b", gpu="h100", max_num_seqs=256), shipped_knobs("h100"))
    old, tokens = DraftCost("autoregressive", 1.0), 1.0 + sum(survival[:GAMMA])
    out = {}
    for b in PUBLISHED:
        ctx = b * CONTEXT
        ar, verify = (float(table.step_seconds(n, b, ctx)) for n in (b, b * (1 + GAMMA)))
        draft = float(old.price(np.array([b * GAMMA]), np.array([b]), np.array([GAMMA]), table)[0])
        out[b] = tokens * ar / (draft + verify)
    return out


def implied_gap(survival=VLLM_MEASURED) -> dict[int, float]:
    """{batch: seconds} the speculative step would need to grow by for the first row to read the
    published speedup: E · no-spec step / published − E · no-spec step / predicted."""
    table = cost_table(VllmSpec(model="llama3.1-8b", gpu="h100", max_num_seqs=256), shipped_knobs("h100"))
    tokens, got = 1.0 + sum(survival[:GAMMA]), speedups("eagle3", "sglang", survival)
    out = {}
    for b, p in PUBLISHED.items():
        ar = float(table.step_seconds(b, b, b * CONTEXT))
        out[b] = tokens * ar / p - tokens * ar / got[b]
    return out


def draft_cost_per_token(engine: str, preset: str, k: int, batch: int) -> float:
    """Seconds the speculative step spends beyond its verify pass, per draft token (K of them), for
    Llama-3.1-8B on one H100 with `batch` requests of CONTEXT KV tokens, E = 1 + 0.7·K (the acceptance
    only scales the SGLang host loops): how the EAGLE-1 and EAGLE-3 heads rank as an engine runs them."""
    spec = VllmSpec(model="llama3.1-8b", gpu="h100", max_num_seqs=256)
    knobs = shipped_knobs("h100")
    table, target, gpu = cost_table(spec, knobs), get_model("llama3.1-8b"), get_gpu("h100")
    own, kv = own_draft_cost(drafter_shape(preset, target), target, gpu, knobs, k, batch * k, engine=engine,
                             emitted=1.0 + 0.7 * k)  # fmt: skip
    draft = float(own.price(np.array([batch * k]), np.array([batch]), np.array([k]), table)[0])
    return (draft + (kv + own.verify_kv_s) * batch * CONTEXT) / k


def order_rows() -> list[str]:
    """EAGLE-1 vs EAGLE-3 draft seconds per draft token across K (ms), by engine version and batch."""
    lines = [f"{'draft ms per draft token':<30} " + " ".join(f"{'K' + str(k):>11}" for k in (2, 3, 5, 8))]
    for engine in ("vllm-0.10", "vllm-0.15", "sglang-0.4"):
        for batch in (1, 32):
            cells = []
            for k in (2, 3, 5, 8):
                e1, e3 = (draft_cost_per_token(engine, p, k, batch) * 1e3 for p in ("eagle1", "eagle3"))
                cells.append(f"{e1:5.3f}/{e3:5.3f}")
            lines.append(
                f"{engine + ' b' + str(batch) + ' (E1/E3)':<30} " + " ".join(f"{c:>11}" for c in cells)
            )
    return lines


def _row(label: str, got: dict[int, float]) -> tuple[str, float]:
    errs = [abs(got[b] - p) / p * 100 for b, p in PUBLISHED.items()]
    cells = " ".join(f"{got[b]:5.2f}" for b in PUBLISHED)
    return f"{label:<36} {cells}   worst {max(errs):5.1f}%", max(errs)


# ---- SGLang v0.4.4's scheduler / EAGLE-verify Python per request and per emitted token (item 1) ----
# A model of the Python work, written here from reading the v0.4.4 wheel (scheduler_output_processor_mixin
# process_batch_result_decode + stream_output_generation, schedule_batch Req.check_finished /
# init_incremental_detokenize / filter_batch, speculative/eagle_utils EagleVerifyInput.verify and
# EagleDraftInput.prepare_extend_after_decode): the same attribute reads, list appends, stop checks and
# the pickled BatchTokenIDOut, on stub requests. No speculative run is involved: it prices host Python.


class _Tokenizer:
    """A Hugging Face fast tokenizer's `eos_token_id`: a property → str(token) → convert_tokens_to_ids."""

    additional_stop_token_ids = None

    def __init__(self) -> None:
        self._eos, self._vocab = "<|eot_id|>", {"<|eot_id|>": 128009}

    @property
    def eos_token(self) -> str:
        return str(self._eos)

    def convert_tokens_to_ids(self, token):
        return self._vocab.get(token) if isinstance(token, str) else [self._vocab.get(t) for t in token]

    @property
    def eos_token_id(self):
        return None if self._eos is None else self.convert_tokens_to_ids(self.eos_token)


class _Params:
    max_new_tokens, ignore_eos, stop_token_ids, stop_strs = 1 << 30, False, None, ()
    skip_special_tokens, spaces_between_special_tokens, no_stop_trim = True, True, False


class _Req:
    """The fields v0.4.4's decode loops read on a request (prompt `prompt` tokens, `out` emitted)."""

    def __init__(self, i: int, tokenizer: _Tokenizer, prompt: int = 200, out: int = 256) -> None:
        self.rid, self.prompt_ids = f"{i:032x}", list(range(prompt))
        self.output_ids, self.finished_reason, self.to_abort = list(range(out)), None, False
        self.params, self.eos_ids, self.tokenizer = _Params(), {128001, 128008, 128009}, tokenizer
        self.stream, self.decoded_text, self.read_offset, self.surr_offset = True, "", None, None
        self.cached_tokens = self.verify_ct = 0
        self.return_logprob = self.return_hidden_states = self.is_retracted = False
        self.grammar = None

    def finished(self) -> bool:
        return self.finished_reason is not None

    def check_finished(self) -> None:
        """Req.check_finished on a live request: abort, length, stop ids, EOS set, tokenizer EOS."""
        if self.finished() or self.to_abort or len(self.output_ids) >= self.params.max_new_tokens:
            return
        last = self.output_ids[-1]
        if not self.params.ignore_eos:
            hit = bool(self.params.stop_token_ids) and last in self.params.stop_token_ids
            hit |= bool(self.eos_ids) and last in self.eos_ids
            if self.tokenizer is not None:
                hit |= last == self.tokenizer.eos_token_id
                extra = self.tokenizer.additional_stop_token_ids
                hit |= bool(extra) and last in extra
            if hit:
                self.finished_reason = "eos"
        if self.params.stop_strs:
            pass

    def detokenize_window(self):
        """init_incremental_detokenize: prompt + output concatenated, sliced from the surrogate offset."""
        if self.surr_offset is None or self.read_offset is None:
            self.read_offset = len(self.prompt_ids)
            self.surr_offset = max(self.read_offset - 5, 0)
        ids = self.prompt_ids + self.output_ids
        return ids[self.surr_offset :], self.read_offset - self.surr_offset


def _stream(reqs, spec: bool) -> bytes:
    """stream_output_generation with stream_interval 1: every live request's columns, pickled as the
    scheduler's send_pyobj pickles BatchTokenIDOut for the detokenizer."""
    cols: list[list] = [[] for _ in range(12)]
    for r in reqs:
        if r.finished() or (r.stream and len(r.output_ids) % 1 == 0):
            window, offset = r.detokenize_window()
            for col, v in zip(cols, (r.rid, None, r.decoded_text, window, offset,
                                     r.params.skip_special_tokens, r.params.spaces_between_special_tokens,
                                     r.params.no_stop_trim, len(r.prompt_ids), len(r.output_ids),
                                     r.cached_tokens)):  # fmt: skip
                col.append(v)
            if spec:
                cols[11].append(r.verify_ct)
    return pickle.dumps(cols, protocol=pickle.HIGHEST_PROTOCOL)


def _results(reqs, next_ids, spec: bool) -> None:
    """process_batch_result_decode's loop (spec: the tokens were appended in verify)."""
    for r, token in zip(reqs, next_ids):
        if r.is_retracted:
            continue
        if not spec:
            r.output_ids.append(token)
        r.check_finished()
        if r.return_logprob or r.return_hidden_states or (r.grammar is not None and not spec):
            pass


def _verify(reqs, rows, predict) -> tuple[list, list]:
    """EagleVerifyInput.verify's loop: every accepted token appended and stop-checked."""
    keep, live = [], []
    for i, (r, row) in enumerate(zip(reqs, rows)):
        ok = []
        for idx in row:
            if idx == -1:
                break
            r.output_ids.append(predict[idx])
            r.check_finished()
            if r.finished():
                break
            ok.append(idx)
        if not r.finished():
            keep.extend(ok)
            live.append(i)
        r.verify_ct += 1
    return keep, live


def _spec_step(reqs, tensors, emitted: int, gamma: int) -> None:
    accept, predict, verified = tensors
    _ = [i for i in range(len(reqs)) if not reqs[i].finished()]  # filter_batch
    keep, live = _verify(reqs, accept.tolist(), predict.tolist())
    accepted = [emitted - 1] * len(reqs)  # accept_length.tolist()
    _ = [accepted[i] for i in live]
    lens = [a + 1 for a in accepted]  # prepare_extend_after_decode
    kept, total = [], sum(lens)
    for i, r in enumerate(reqs):
        if not r.finished():
            kept.append(i)
            total += lens[i]
    _results(reqs, verified, True)  # zip over the verified-id tensor: one view per emitted token
    _stream(reqs, True)


def _nospec_step(reqs, next_ids) -> None:
    _ = [i for i in range(len(reqs)) if not reqs[i].finished()]
    _results(reqs, next_ids.tolist(), False)
    _stream(reqs, False)


def _time_step(batch: int, emitted: int | None, *, gamma: int = GAMMA, reps: int = 10, trials: int = 40):
    """Fastest mean seconds of one step's loops over `reps` steps (of `trials` trials: the shared
    machine's load only ever adds); emitted None: the no-speculation step."""
    import torch  # here, not at import: the pricing rows do not need it

    tok, best = _Tokenizer(), float("inf")
    width = gamma + 1
    rows = [[r * width + j if j < (emitted or 0) else -1 for j in range(width)] for r in range(batch)]
    tensors = (torch.tensor(rows), torch.arange(batch * (gamma + 1)), torch.zeros(batch * (emitted or 1)))
    for _ in range(trials):
        reqs = [_Req(i, tok) for i in range(batch)]
        total = 0.0
        gc.disable()
        try:
            for _ in range(reps):
                t0 = time.perf_counter()
                if emitted is None:
                    _nospec_step(reqs, tensors[2])
                else:
                    _spec_step(reqs, tensors, emitted, gamma)
                total += time.perf_counter() - t0
                for r in reqs:
                    del r.output_ids[256:]
        finally:
            gc.enable()
        best = min(best, total / reps)
    return best


SMALL, LARGE = 4, 64


def host_loop_costs(trials: int = 40) -> dict[str, float]:
    """Seconds of the loops: per request a step (no speculation; speculative, one emitted token) and per
    further emitted token, from differences of fastest means (R = 4 and 64; E = 1 and γ + 1); each point
    the fastest of `trials` trials (the shared machine's load only ever adds)."""
    t = {k: _time_step(b, e, trials=trials) for k, (b, e) in
         {"n4": (SMALL, None), "n64": (LARGE, None), "s4": (SMALL, 1), "s64": (LARGE, 1),
          "s64x": (LARGE, GAMMA + 1)}.items()}  # fmt: skip
    span = LARGE - SMALL
    return {"nospec_req": (t["n64"] - t["n4"]) / span, "spec_req": (t["s64"] - t["s4"]) / span,
            "spec_token": (t["s64x"] - t["s64"]) / (LARGE * GAMMA),
            "nospec_4": t["n4"], "spec_4": t["s4"]}  # fmt: skip


def main(host: bool = False) -> None:
    print(f"EAGLE-3 chain of {GAMMA}, Llama-3.1-8B on one H100, {CONTEXT} KV tokens a request; shipped H100")
    sk = shipped_spec_knobs()
    print("knobs (no-speculation calibration) + engine terms (price.spec_engine, spec_versions) + the")
    print(
        f"shipped speculative knobs (op_s {sk.op_s * 1e6:.1f} µs, mask_eff {sk.mask_eff:.3f}, host_scale "
        f"{sk.host_scale:.2f}: `specbed cost calibrate --spec` on the dataset's train half)"
    )
    print(
        f"SGLang exposed host: {SGLANG_HOST_STEP_S * 1e3:.3f} ms a step (sglang#5608's "
        f"{SGLANG_OVERLAP_GAIN_S * 1e3:.3f} − 16 × {SGLANG_NOSPEC_REQ_S * 1e6:.1f} µs) + "
        f"{SGLANG_HOST_REQ_S * 1e6:.1f} µs a request + {SGLANG_HOST_TOKEN_S * 1e6:.1f} µs a further token"
    )
    print(f"{'':<36} " + " ".join(f"{'b' + str(b):>5}" for b in PUBLISHED))
    print(f"{'published (Table 3, SGLang v0.4.4)':<36} " + " ".join(f"{p:5.2f}" for p in PUBLISHED.values()))
    main_row = speedups("eagle3", "sglang", VLLM_MEASURED)
    rows = [
        ("sglang, vLLM-measured acceptance", main_row),
        ("sglang, flat 0.8", speedups("eagle3", "sglang", FLAT)),
        ("sglang per-step host only, vLLM acc.", speedups("eagle3", SGLANG_STEP_ONLY, VLLM_MEASURED)),
        ("sglang per-step host only, flat 0.8", speedups("eagle3", SGLANG_STEP_ONLY, FLAT)),
        ("vllm engine, vLLM-measured acc.", speedups("eagle3", "vllm", VLLM_MEASURED)),
        ("no engine terms, flat 0.8", speedups("eagle3", None, FLAT)),
        ("old pricing (layer share), flat 0.8", old_speedups(FLAT)),
        ("sglang, vLLM acc., 5 µs an op", speedups("eagle3", "sglang", VLLM_MEASURED, op_s=5e-6)),
        ("sglang, vLLM acc., 20 µs an op", speedups("eagle3", "sglang", VLLM_MEASURED, op_s=20e-6)),
        ("sglang, vLLM acc., host loops ×0.5", speedups("eagle3", "sglang", VLLM_MEASURED, host_scale=0.5)),
        ("sglang, vLLM acc., host loops ×2", speedups("eagle3", "sglang", VLLM_MEASURED, host_scale=2.0)),
    ]
    for label, got in rows:
        print(_row(label, got)[0])
    print("|error| of the first row (sglang engine, vLLM-measured acceptance):")
    errs = {b: abs(main_row[b] - p) / p * 100 for b, p in PUBLISHED.items()}
    print("  " + "  ".join(f"b{b} {e:4.1f}%" for b, e in errs.items()))
    within = sum(e <= 15 for e in errs.values())
    worst = max(errs, key=errs.get)
    print(f"  worst {errs[worst]:.1f}% (b{worst}); within 15 %: {within} of {len(errs)}")
    print("\n".join(order_rows()))
    gap = implied_gap()
    print("step the published speedup implies − the first row's (E · no-spec step / speedup), ms:")
    print("  " + "  ".join(f"b{b} {g * 1e3:.2f}" for b, g in gap.items()))
    if host:
        got = host_loop_costs()
        print("host loops (this machine, fastest of 40 trials): no speculation "
              f"{got['nospec_req'] * 1e6:.1f} µs a request (constant {SGLANG_NOSPEC_REQ_S * 1e6:.1f}); "
              f"speculative {got['spec_req'] * 1e6:.1f} µs a request ({SGLANG_HOST_REQ_S * 1e6:.1f}) + "
              f"{got['spec_token'] * 1e6:.1f} µs a further emitted token ({SGLANG_HOST_TOKEN_S * 1e6:.1f}); "
              f"at 4 requests {got['nospec_4'] * 1e6:.1f} / {got['spec_4'] * 1e6:.1f} µs a step")  # fmt: skip


if __name__ == "__main__":
    main(host="--host" in sys.argv[1:])
