"""Automatic prefix caching as vLLM v1 does it: whole KV blocks keyed by chained block hashes, LRU eviction.

Role: a replica's (or a pool's) cache of computed KV blocks. A request's prompt is cut into blocks of
`block_size` tokens (16, vLLM's default); block i's key is a hash of (block i−1's key, block i's content),
so a key names the whole prefix up to that block and a hit is always a run of leading blocks. Only full
blocks are cached or hit; vLLM always computes at least the prompt's last token, so a prompt whose blocks
are all cached still recomputes its last block (`hit_tokens`).

API (all O(blocks of one request)):
- `chain(contents)`: the chained keys of a sequence of block contents (any hashable per block: token ids,
  or ids of synthetic content such as ("system", group, i)); `keys_from_hash_ids(ids)` for Mooncake-style
  traces, whose `hash_ids` already name prefix blocks.
- `lookup(keys)`: how many leading blocks are cached (touched as most recently used; counted in the
  statistics); `peek(keys)` the same without touching or counting.
- `insert(keys)`: cache them (blocks already present are only touched), evicting least recently used
  blocks beyond `capacity`; `evict(n)` drops the n least recently used; `resize(capacity)`.
- a host tier (`offload_blocks`, CPU KV offload) adds its blocks to whatever capacity the GPU leaves; a
  hit there is served like a GPU hit (its PCIe load is not priced).
- `stats()`: lookups, blocks asked / hit, hit rate, evictions, resident blocks.
- `own_keys(inputs, outputs)`: keys of prompts that share nothing (a benchmark's random-token prompts);
  `request_keys(keys, rid, n)`: a request's first n block keys, its output blocks (its own) past the
  prompt's. `release` puts a preempted request's computed blocks back under these keys, so it resumes
  from what is left of them (`request_hit`; vLLM frees them as cached blocks).

The simulator's model of which blocks may be evicted is vLLM's in the large: vLLM evicts only free
blocks (no running request references them), LRU; here the caller bounds the cache to the blocks not
held by running requests (`capacity`, or `resize` as that changes), so resident blocks are the free ones.

May import: the standard library.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence


class PrefixCache:
    """An LRU set of chained block keys with hit counters (module docstring)."""

    def __init__(self, capacity: int, block_size: int = 16, offload_blocks: int = 0) -> None:
        if isinstance(block_size, bool) or int(block_size) != block_size or block_size < 1:
            raise ValueError(f"prefix cache: block_size must be a whole number ≥ 1, got {block_size!r}")
        self.block_size = int(block_size)
        self._blocks: OrderedDict[int, int] = OrderedDict()  # key -> times hit
        #: blocks a host-memory tier adds to whatever capacity the GPU leaves (CPU KV offload)
        self.offload_blocks = max(0, int(offload_blocks))
        self.capacity = 0
        self.resize(capacity)
        self.lookups = 0
        self.blocks_asked = 0
        self.blocks_hit = 0
        self.tokens_asked = 0
        self.tokens_hit = 0
        self.evictions = 0

    # -- keys ------------------------------------------------------------------------------------------

    @staticmethod
    def chain(contents: Iterable[Hashable], parent: int = 0) -> list[int]:
        """Chained keys: key_i = hash((key_{i−1}, content_i)), starting from `parent` (0: no prefix)."""
        keys, h = [], parent
        for c in contents:
            h = hash((h, c))
            keys.append(h)
        return keys

    @staticmethod
    def keys_from_hash_ids(hash_ids: Sequence[int]) -> list[int]:
        """Keys of a trace's `hash_ids` (each already names its whole prefix, as in the Mooncake traces)."""
        return [hash(("hash_id", int(h))) for h in hash_ids]

    # -- the cache -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, key: int) -> bool:
        return key in self._blocks

    def peek(self, keys: Sequence[int]) -> int:
        """Leading blocks of `keys` that are cached (nothing touched or counted)."""
        n = 0
        for k in keys:
            if k not in self._blocks:
                break
            n += 1
        return n

    def lookup(self, keys: Sequence[int]) -> int:
        """Leading blocks of `keys` that are cached; they become the most recently used and count as hits."""
        blocks = self._blocks
        n = 0
        for k in keys:
            if k not in blocks:
                break
            blocks[k] += 1
            blocks.move_to_end(k)
            n += 1
        self.lookups += 1
        self.blocks_asked += len(keys)
        self.blocks_hit += n
        return n

    def hit_tokens(self, keys: Sequence[int], prompt_tokens: int) -> int:
        """Tokens of a `prompt_tokens`-token prompt (block keys `keys`) served from the cache: whole leading
        blocks, at most prompt_tokens − 1 (the last token is always computed). Counted as a lookup."""
        usable = max(0, (int(prompt_tokens) - 1) // self.block_size)
        hit = self.lookup(keys[:usable]) * self.block_size
        self.tokens_asked += int(prompt_tokens)
        self.tokens_hit += hit
        return hit

    def insert(self, keys: Iterable[int]) -> None:
        """Cache these blocks (present ones are touched), then evict LRU blocks beyond the capacity."""
        blocks = self._blocks
        for k in keys:
            if k in blocks:
                blocks.move_to_end(k)
            else:
                blocks[k] = 0
        self._trim()

    def evict(self, n: int) -> int:
        """Drop the n least recently used blocks (fewer if fewer are cached); returns how many."""
        dropped = 0
        while dropped < n and self._blocks:
            self._blocks.popitem(last=False)
            dropped += 1
        self.evictions += dropped
        return dropped

    def resize(self, capacity: int) -> None:
        """Bound the cache to `capacity` GPU blocks (≥ 0) plus the offload tier's, evicting LRU beyond."""
        if isinstance(capacity, bool) or int(capacity) != capacity or capacity < 0:
            raise ValueError(f"prefix cache: capacity must be a whole number ≥ 0, got {capacity!r}")
        self.capacity = int(capacity) + self.offload_blocks
        self._trim()

    def _trim(self) -> None:
        extra = len(self._blocks) - self.capacity
        if extra > 0:
            self.evict(extra)

    def release(self, keys: Sequence[int], rid: int, tokens: int, free_tokens: int) -> None:
        """A preempted request's computed blocks (its first `tokens`; prompt keys `keys`) freed as vLLM
        frees them: cached, tail first so the tail is evicted first, in a cache first bounded to the
        `free_tokens` of KV now free (its own KV included)."""
        self.resize(max(0, free_tokens // self.block_size))
        self.insert(reversed(request_keys(keys, rid, tokens // self.block_size)))

    def request_hit(self, keys: Sequence[int], rid: int, tokens: int) -> int:
        """`hit_tokens` of request `rid` (prompt keys `keys`) at `tokens` (prompt + emitted): past its
        prompt, a resumed request's own output blocks (`request_keys`)."""
        return self.hit_tokens(request_keys(keys, rid, tokens // self.block_size), tokens)

    def hits_of(self, key: int) -> int:
        """How many lookups hit this block since it was cached (0 if absent)."""
        return self._blocks.get(key, 0)

    def stats(self) -> dict:
        """Counters since the cache was made (token figures from `hit_tokens`)."""
        return {
            "lookups": self.lookups,
            "blocks_asked": self.blocks_asked,
            "blocks_hit": self.blocks_hit,
            "tokens_asked": self.tokens_asked,
            "tokens_hit": self.tokens_hit,
            "hit_rate": self.tokens_hit / self.tokens_asked if self.tokens_asked else 0.0,
            "evictions": self.evictions,
            "resident_blocks": len(self._blocks),
            "block_size": self.block_size,
        }


def own_keys(inputs, block_size: int = 16) -> list[range]:
    """Block keys of N prompts that share no block (int64[N] prompt lengths): request i's prompt blocks
    are its own run of integers (negative, apart from `chain`'s hashes; a `range`, which is how the server
    tells them from shared ones and does not cache them at prefill completion: no other request could
    hit them), so a request hits only blocks it computed itself (a preempted request resuming)."""
    return [
        range(-((i + 1) << 32), -((i + 1) << 32) + int(p) // block_size)
        for i, p in enumerate(inputs.tolist())
    ]


def request_keys(keys: Sequence[int], rid: int, n: int) -> Sequence[int]:
    """The first n block keys of request `rid` whose prompt blocks are `keys`: past the prompt, blocks of
    its own output (keyed by request and position: no other request shares them)."""
    if len(keys) >= n:
        return keys[:n]
    return list(keys) + [hash((-7, rid, j)) for j in range(len(keys), n)]
