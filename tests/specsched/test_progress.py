"""specsched.io.progress: the one progress printer (analysis sweeps and engine.lm training both use it)."""

import io

from specsched.io.progress import Progress


def test_lines_off_a_terminal_at_each_tenth_with_rate_eta_and_note():
    out = io.StringIO()
    bar = Progress(20, label="[train] target", unit="steps", every=1e9, stream=out)
    for i in range(20):
        bar.update(i + 1, f"loss {i}")
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 11  # the first, then one per 10 %: not one per step
    assert lines[-1].startswith("[train] target [") and "20/20 100%" in lines[-1]
    assert "steps/s  ETA" in lines[-1] and lines[-1].endswith("loss 19")


def test_cached_items_are_shown_but_not_counted_in_the_rate():
    out = io.StringIO()
    bar = Progress(10, done=4, label="sweep s", stream=out)
    assert "4/10" in out.getvalue() and "ETA --:--" in out.getvalue()  # drawn at once; no rate yet
    bar.advance(2)
    assert "6/10" in bar.text() and "cells/s" in bar.text()


def test_disabled_or_empty_prints_nothing():
    out = io.StringIO()
    Progress(5, stream=out, enabled=False).advance()
    Progress(0, stream=out).advance()
    assert out.getvalue() == ""
