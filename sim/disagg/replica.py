"""A decode-pool engine: requests arrive with their prompt's KV already transferred from a prefill pool.

Role: `DecodeReplica`, a `sim.server.Replica` whose admission differs in one way: a request fresh from the
hand-off holds its prompt's KV on arrival and its first token was already emitted by the prefill pool,
so it is admitted with gen = 1 and only a one-token "prefill" chunk — the decode side's first forward
over that token (as SGLang/vLLM decode instances run it) — plus, when the drafter's KV is rebuilt on the
decode side (`handoff.draft_kv = "rebuild"`), `rebuild[rid]` more target-equivalent tokens (the drafter's
prefill over the prompt). Everything else — batching, speculation, the policy, preemption (a preempted
request recomputes its prompt and emitted tokens here, as a colocated one does) — is the colocated
engine's.

KV accounting keeps `Replica`'s slot formula (prompt + emitted − prefill left): admission adds that much
to `kv_used`, so a slot's release matches. During a rebuild it holds prompt − rebuild tokens (a transient
under-count, stated).

May import: numpy, the standard library, `sim.server`.
"""

from __future__ import annotations

import numpy as np

from sim.server import Replica


class DecodeReplica(Replica):
    """`Replica` admitting handed-off requests (module docstring). rebuild: int64[N] drafter re-prefill
    tokens per request (zeros with draft_kv = "transfer")."""

    def __init__(self, index: int, eng, rebuild: np.ndarray) -> None:
        self.rebuild = rebuild
        super().__init__(index, eng)

    def _admit(self, pf, chunks, room: int, now: float):
        eng, rec = self.eng, self.eng.recorder
        new_slots, new_chunks = [], []
        pending = 0 if chunks is None else int(np.add.reduce(chunks))
        kv_room = eng.kv_tokens - self.kv_used - (eng.gamma + 1) * self.n_decoding - pending
        while self.queue and room > 0 and self.n < eng.max_num_seqs:
            rid = self.queue[0]
            done = int(rec.generated[rid])
            prompt = int(eng.input_tokens[rid])
            if done == 0:  # fresh from the hand-off: KV in place, first token already out
                gen0, left = 1, 1 + int(self.rebuild[rid])
            else:  # preempted here earlier: recompute prompt + emitted, as a colocated engine
                gen0, left = done, prompt + done
            held = prompt + gen0 - left
            chunk = min(left, room)
            if held + chunk + eng.gamma + 1 > kv_room and self.n > 0:
                break  # wait for KV to free up (an empty engine admits: _make_room reports a misfit)
            self.queue.popleft()
            rec.admitted(rid, now, self.index)
            s = self.n
            self.n += 1
            row = (rid, left, gen0, eng.output_tokens[rid], eng.domain[rid], prompt, 0, 0, 0, 0)
            self.state[:, s] = row
            self.lat[s] = eng.latent[rid]
            self.kv_used += held
            kv_room -= held + chunk
            room -= chunk
            new_slots.append(s)
            new_chunks.append(chunk)
        slots = np.asarray(new_slots, dtype=np.int64)
        if self.offsets is not None and new_slots:
            new = slice(new_slots[0], self.n)
            self.offsets[new] = eng.model.offsets(self.dom[new], self.lat[new])
        sizes = np.asarray(new_chunks, dtype=np.int64)
        if pf is not None:
            slots, sizes = np.concatenate([pf, slots]), np.concatenate([chunks, sizes])
        return slots, sizes, room
