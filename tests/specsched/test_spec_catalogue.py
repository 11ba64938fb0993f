"""Issue 37 wave 2: the check split's models and GPUs in the catalogue; EAGLE-3's first-pass-only fusion."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from specsched.price import GPUS, get_gpu, get_model
from specsched.price.draft_shape import drafter_shape, pass_seconds
from specsched.price.knobs import shipped_knobs
from specsched.spec_knobs import SpecKnobs
from specsched.spec_versions import EAGLE3_FUSION_OPS, engine_name
from validate.spec_cases import read_cases
from validate.spec_replay import replay, unmodelled

CHECK = "validate/data/spec_check.csv"
GPU, KNOBS = get_gpu("h100"), shipped_knobs("h100")


def test_qwen3_30b_a3b_row_reproduces_the_model_card_counts():
    m = get_model("Qwen/Qwen3-30B-A3B")
    assert m.name == "qwen3-30b-a3b" and m.is_moe and (m.experts, m.top_k, m.moe_layers) == (128, 8, 48)
    assert m.expert_params == pytest.approx(3 * 2048 * 768, rel=0.01)  # one expert's gate, up and down
    assert m.kv_bytes_per_token == 2 * 48 * 4 * 128 * 2


def test_moe_verify_reads_more_experts_than_decode():
    m = get_model("qwen3-30b-a3b")
    one, verify = m.weight_params_read(np.array([1.0, 4.0]))
    assert one == pytest.approx(m.active_params)
    # four tokens' routing draws touch 128·(1 − (120/128)^4) ≈ 29 experts a layer, not 8
    touched = 128 * (1 - (120 / 128) ** 4)
    assert verify == pytest.approx(m.dense_params + 48 * touched * m.expert_params)
    assert verify > 2 * one


def test_new_gpu_and_hf_id_rows():
    a = GPUS["a100-40gb"]
    assert a.hbm_bw == 1.555e12 and a.flops == GPUS["a100"].flops and a.memory == 40e9
    assert get_model("deepseek-ai/DeepSeek-V3").name == "deepseek-v3"


def test_check_cases_the_catalogue_cannot_price_say_why():
    reasons = {c.case_id: unmodelled(c) for c in read_cases(CHECK)}
    assert "MLA is not priced" in reasons["lmsys-mtp-w3"]
    assert reasons["vllm24343-e1-k1"] == ""  # a100-40gb: A100 80GB's kernel efficiencies (SAME_DIE)
    assert all(reasons[c] == "" for c in reasons if c.startswith(("specforge339", "angelslim163")))


def test_dated_versions_read_as_the_release_of_that_date():
    assert engine_name("vllm", "~0.9.2") == "vllm-0.9" and engine_name("sglang", "~0.4.4") == "sglang-0.4"
    assert engine_name("vllm", "unknown") == "vllm-0.15"


def test_eagle3_fuses_the_target_layers_in_its_first_pass_only():
    target = get_model("llama3.1-8b")
    e3, e1 = drafter_shape("eagle3", target), drafter_shape("eagle1", target)
    assert e3.fuses_once and not e1.fuses_once
    m = np.array([1.0])
    fc_s = e3.fc_params * 2.0 / (KNOBS.eta_bw * GPU.hbm_bw)
    with_fc = pass_seconds(e3, GPU, KNOBS, m)
    later = pass_seconds(e3, GPU, KNOBS, m, fusion=False)
    assert with_fc - later == pytest.approx(fc_s, rel=1e-6)
    assert pass_seconds(e1, GPU, KNOBS, m, fusion=False) == pytest.approx(pass_seconds(e1, GPU, KNOBS, m))
    assert EAGLE3_FUSION_OPS == 4  # fc + two more aux-state gathers + their cat


def test_replicated_fusion_fc_is_read_whole_on_every_rank():
    target = get_model("llama3.1-70b")
    e3 = drafter_shape("eagle3", target)
    sharded = dataclasses.replace(e3, fc_replicated=False)
    k = dataclasses.replace(KNOBS, step_s=0.0, c0=0.0, link_latency=0.0)
    one = np.array([1.0])
    extra = pass_seconds(e3, GPU, k, one, tp=8) - pass_seconds(sharded, GPU, k, one, tp=8)
    assert extra == pytest.approx(e3.fc_params * (1 - 1 / 8) * 2.0 / (k.eta_bw * GPU.hbm_bw), rel=1e-6)


def test_check_split_replays_without_error():
    rows = replay(read_cases(CHECK), SpecKnobs())
    modelled = [r for r in rows if "error_pct" in r]
    assert len(modelled) >= 30 and all(np.isfinite(r["predicted"]) for r in modelled)


def test_a_case_whose_speedup_exceeds_its_acceptance_is_marked_not_dropped():
    from validate.spec_fit import table

    cases = {c.case_id: c for c in read_cases(CHECK)}
    rows = replay([cases["trtllm-ngram-b1-v5"], cases["trtllm-ngram-b4-v5"]], SpecKnobs())
    assert "exceeds the acceptance length" in rows[0]["inconsistent"]  # 1.96× at AL 1.66
    assert "inconsistent" not in rows[1] and all("error_pct" in r for r in rows)  # 1.64× at AL 1.66
    assert "* the case's own figures disagree" in table(rows, [])


def test_the_fit_skips_a_case_whose_figures_disagree():
    from validate.spec_fit import fit

    bad = {c.case_id: c for c in read_cases(CHECK)}["trtllm-ngram-b1-v5"]
    assert fit([bad]) == SpecKnobs()  # nothing fittable: the priors


def test_attention_backend_column_is_optional_checked_and_picks_the_verify_kernel(tmp_path):
    import dataclasses

    from specsched.io.errors import InputError
    from validate.spec_cases import COLUMNS
    from validate.spec_replay import step_parts

    tree = {c.case_id: c for c in read_cases("validate/data/spec_train.csv")}[
        "sdb-sglang-qwen3-8b-gsm8k-tree21-b64"]  # fmt: skip
    assert tree.attention_backend == "flashinfer"
    fa3 = dataclasses.replace(tree, attention_backend="fa3")
    knobs = SpecKnobs()
    assert step_parts(tree, knobs)["spec"]["verify_kv"] > 0.0 == step_parts(fa3, knobs)["spec"]["verify_kv"]
    cells = ["c", "s", "q", "check", "vllm", "0.10", "h100", "1", "llama3.1-8b", "", "eagle", "", "chain",
             "3", "", "w", "1", "", "", "speedup", "1.5", "", "2.0", "", "q"]  # fmt: skip
    row = dict(zip(COLUMNS, cells, strict=True))
    for value, engine, message in (("xla", "sglang", "must be one of"), ("fa3", "vllm", "SGLang rows only")):
        path = tmp_path / f"{value}.csv"
        cells = {**row, "engine": engine, "attention_backend": value}
        path.write_text(",".join(cells) + "\n" + ",".join(cells.values()) + "\n")
        with pytest.raises(InputError, match=message) as err:
            read_cases(path)
        assert err.value.field == "attention_backend" and err.value.line == 2
    assert all(c.attention_backend is None for c in read_cases(CHECK))  # the column is optional
