"""Issue 36 item 3: the documented Grafana paste reads like the scrape it came from."""

from __future__ import annotations

import re
from pathlib import Path

from bridge.acceptance import read_acceptance

PROM = Path(__file__).resolve().parents[2] / "examples" / "vllm" / "after.prom"


def test_grafana_name_label_paste_reads_like_the_scrape(tmp_path):
    rows = [ln for ln in PROM.read_text().splitlines() if ln and not ln.startswith("#")]
    pasted = [re.sub(r"^(vllm:[a-z_]+)\{", r'{__name__="\1",', ln) for ln in rows]
    assert pasted[0].startswith('{__name__="vllm:')
    (tmp_path / "g.txt").write_text("\n".join(pasted) + "\n")
    a, b = read_acceptance([tmp_path / "g.txt"]), read_acceptance([PROM])
    assert a.drafts == b.drafts and list(a.per_pos) == list(b.per_pos)
