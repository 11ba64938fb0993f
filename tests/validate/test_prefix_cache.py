"""sim.prefix_cache: chained keys, whole-block hits, LRU eviction, counters."""

import pytest

from sim.prefix_cache import PrefixCache


def test_chain_names_the_whole_prefix():
    a = PrefixCache.chain([(0, 1), (0, 2), (1, 5)])
    b = PrefixCache.chain([(0, 1), (0, 2), (1, 6)])
    c = PrefixCache.chain([(0, 9), (0, 2), (1, 5)])
    assert a[:2] == b[:2] and a[2] != b[2]
    assert all(x != y for x, y in zip(a, c))  # a different first block changes every later key


def test_hits_are_leading_whole_blocks_and_never_the_last_token():
    cache = PrefixCache(100, block_size=16)
    keys = PrefixCache.chain(range(4))
    assert cache.hit_tokens(keys, 64) == 0
    cache.insert(keys)
    assert cache.hit_tokens(keys, 64) == 48  # 64 tokens: the last block is recomputed (last token)
    assert cache.hit_tokens(keys, 70) == 64
    other = keys[:2] + PrefixCache.chain([7, 8], parent=keys[1])
    assert cache.hit_tokens(other, 70) == 32
    st = cache.stats()
    assert st["lookups"] == 4 and st["tokens_hit"] == 48 + 64 + 32
    assert st["hit_rate"] == pytest.approx((48 + 64 + 32) / (64 + 64 + 70 + 70))


def test_lru_eviction_keeps_recently_used_blocks():
    cache = PrefixCache(3)
    cache.insert([1, 2, 3])
    assert cache.lookup([1]) == 1  # 1 is now the most recently used
    cache.insert([4])
    assert 2 not in cache and 1 in cache and 4 in cache
    assert cache.evictions == 1
    cache.resize(1)
    assert len(cache) == 1 and 4 in cache
    assert cache.hits_of(4) == 0


def test_offload_tier_adds_capacity():
    cache = PrefixCache(2, offload_blocks=3)
    cache.insert(range(10))
    assert len(cache) == 5


def test_peek_counts_nothing():
    cache = PrefixCache(10)
    cache.insert([1, 2])
    assert cache.peek([1, 2, 3]) == 2 and cache.lookups == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_bad_capacity(bad):
    with pytest.raises(ValueError, match="capacity"):
        PrefixCache(bad)


def test_keys_from_hash_ids_are_prefix_names():
    assert PrefixCache.keys_from_hash_ids([3, 4]) == PrefixCache.keys_from_hash_ids([3, 4])
    assert PrefixCache.keys_from_hash_ids([3])[0] != PrefixCache.keys_from_hash_ids([4])[0]
