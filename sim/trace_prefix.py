"""Prefix-cache block keys of a replayed trace: from its `hash_ids` (Mooncake) or its sessions.

Role: feed automatic prefix caching (`sim.prefix_cache`) from a trace, for a run with `cost.model` and
`cost.prefix_caching` on (`sim.run.prepare`). Each request gets the chained keys of its prompt's whole
16-token cache blocks:
- `hash_ids` (one id per `workload.hash_block_tokens`-token trace block, 512 in the Mooncake traces):
  trace block j of 512 tokens is 32 cache blocks, whose contents are (id, 0) … (id, 31); the keys are
  chained, so a hit needs the whole prefix. Only full trace blocks are shared: the tokens of a last
  partial trace block (and any the ids do not cover) are the request's own and never hit.
- sessions (the trace's `session` column, in arrival order): a follow-up turn's prompt starts with the
  previous turn's prompt + output, so its leading min(prompt, previous prompt + output) tokens' whole
  blocks have the previous turn's contents; the rest are its own. Only prompt blocks are cached (at the
  end of prefill), so a follow-up hits the blocks of the previous prompt, not of its output.
With both, `hash_ids` win (they already say what is shared).

May import: numpy, the standard library, `sim.prefix_cache`.
"""

from __future__ import annotations

import numpy as np

from sim.prefix_cache import PrefixCache


def hash_id_keys(
    hash_ids, input_tokens: np.ndarray, hash_block_tokens: int, block_size: int = 16
) -> list[list[int]]:
    """Each request's chained cache-block keys from its trace `hash_ids` (module docstring)."""
    per = hash_block_tokens // block_size
    out = []
    for rid, (ids, prompt) in enumerate(zip(hash_ids, np.asarray(input_tokens).tolist(), strict=True)):
        full = min(int(prompt) // hash_block_tokens, len(ids))
        contents: list = [(int(h), s) for h in np.asarray(ids)[:full].tolist() for s in range(per)]
        own = int(prompt) // block_size - len(contents)
        contents += [("own", rid, i) for i in range(own)]
        out.append(PrefixCache.chain(contents))
    return out


def session_keys(
    session: np.ndarray, input_tokens: np.ndarray, output_tokens: np.ndarray, block_size: int = 16
) -> list[list[int]]:
    """Each request's chained cache-block keys from its session (module docstring); −1: no session."""
    history: dict[int, tuple[list, int]] = {}  # session -> (last turn's block contents, its prompt+output)
    out = []
    prompts, outputs = np.asarray(input_tokens).tolist(), np.asarray(output_tokens).tolist()
    for rid, sid in enumerate(np.asarray(session).tolist()):
        prompt, total = int(prompts[rid]), int(prompts[rid]) + int(outputs[rid])
        prev, prev_total = history.get(sid, ([], 0)) if sid >= 0 else ([], 0)
        shared = min(prompt, prev_total) // block_size
        contents = prev[:shared] + [("turn", rid, i) for i in range(shared, total // block_size)]
        if sid >= 0:
            history[sid] = (contents, total)
        out.append(PrefixCache.chain(contents[: prompt // block_size]))
    return out


def trace_block_keys(table, workload, hash_block_tokens: int, block_size: int = 16) -> list | None:
    """The block keys of a trace replay (`hash_ids`, else sessions), or None when the trace has neither
    (or the workload is not a replay: `table` None)."""
    if table is None:
        return None
    n = len(workload)
    hashes = getattr(table, "hash_ids", None)
    if hashes is not None:
        return hash_id_keys(hashes[:n], workload.input_tokens, hash_block_tokens, block_size)
    if workload.session is not None:
        return session_keys(workload.session, workload.input_tokens, workload.output_tokens, block_size)
    return None
