"""paper_figs.tree_vs_chain --tiny: the summary's layout, the published shape, the goal figures."""

import json

from paper_figs import tree_vs_chain as tvc


def test_tiny_run(tmp_path):
    assert tvc.main(["--tiny", "--out", str(tmp_path), "--quiet"]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    rows = s["vllm_22752"]["roofline"]["rows"]
    assert abs(rows[0]["gain"] - rows[0]["published_gain"]) < 0.05 and rows[2]["gain"] < rows[0]["gain"]
    for dep in tvc.DEPLOYMENTS:
        d = s["sweep"][dep.name]
        assert d["loads"] == tvc.LOADS[True]
        assert all(len(v) == len(d["loads"]) for v in d["tok_s"].values())
        assert all(r["ratio"] > 0.9 for r in d["verdict"])
    assert (tmp_path / "tree_vs_chain.png").read_bytes()[:4] == b"\x89PNG"
