from lsp_server.engine.drafters import NgramDrafter


def test_proposes_what_followed_the_most_recent_earlier_occurrence():
    d = NgramDrafter(min_n=2, max_n=4)
    d.start([1, 2, 3, 4, 5, 9, 1, 2, 3, 7, 8, 0, 1, 2])
    p = d.propose(3)
    # [1, 2] last occurred at positions 6-7, followed by 3, 7, 8
    assert p.tokens == [3, 7, 8]
    assert p.buckets == ["n2"] * 3


def test_prefers_the_longest_match():
    d = NgramDrafter(min_n=2, max_n=4)
    d.start([5, 1, 2, 3, 4, 9, 1, 2, 6, 6, 5, 1, 2])
    p = d.propose(2)
    assert p.tokens == [3, 4] and p.buckets[0] == "n3"


def test_never_matches_itself_and_follows_new_tokens():
    d = NgramDrafter(min_n=2, max_n=3)
    d.start([1, 2, 3])
    assert d.propose(4) is None
    d.extend([1, 2])
    assert d.propose(4).tokens == [3, 1, 2]
