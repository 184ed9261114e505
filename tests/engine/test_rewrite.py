"""The rewrite drafter's alignment between the output so far and the source it rewrites (token lists)."""
from lsp_server.engine.drafters import RewriteDrafter


def drafter(src, out=()):
    d = RewriteDrafter(max_k=4)
    d.start(src)
    d.extend(list(out))
    return d


def test_inactive_without_a_source():
    d = drafter(None)
    assert not d.active and d.propose(8) is None
    d.extend([1, 2])
    assert d.propose(8) is None


def test_a_copy_proposes_the_source_from_the_start_and_stays_in_step():
    src = [10, 11, 12, 13, 14, 15]
    d = drafter(src)
    p = d.propose(3)
    assert p.tokens == [10, 11, 12] and p.buckets == ["copy"] * 3 and p.drafter == "rewrite"
    d.extend([10, 11])
    assert d.propose(8).tokens == [12, 13, 14, 15]
    d.extend([12, 13, 14, 15])
    assert d.propose(8) is None    # the end of the region: nothing left to copy


def test_an_insertion_realigns_by_suffix_after_it():
    src = [1, 2, 3, 4, 5, 6, 7, 8]
    # the output inserts 90, 91 after 1, 2, 3 and then goes on with 4 ...
    d = drafter(src, [1, 2, 3, 90, 91])
    assert d.propose(8) is None    # one substitution guess (after 90) failed: unaligned until a match
    d = drafter(src, [1, 2, 3, 90, 91, 4])
    p = d.propose(3)
    assert p.tokens == [5, 6, 7] and p.buckets[0] == "k1"
    d.extend([5])
    assert d.propose(2).tokens == [6, 7] and d.propose(2).buckets[0] == "copy"


def test_a_deletion_skips_ahead():
    src = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    d = drafter(src, [1, 2, 6])       # 3, 4, 5 deleted
    p = d.propose(2)
    assert p.tokens == [7, 8] and p.buckets[0] == "k1"
    d.extend([7])
    assert d.propose(2).tokens == [8, 9] and d.propose(2).buckets[0] == "copy"


def test_a_one_token_replacement_guesses_a_substitution():
    src = [1, 2, 3, 4, 5, 6]
    d = drafter(src, [1, 2, 77])     # 3 renamed to 77, which the source never had
    p = d.propose(3)
    assert p.tokens == [4, 5, 6] and p.buckets == ["sub"] * 3
    d.extend([4])
    assert d.propose(2).tokens == [5, 6] and d.propose(2).buckets[0] == "copy"


def test_a_longer_replacement_does_not_drift_then_finds_its_place_again():
    src = [1, 2, 3, 4, 5, 6, 7]
    d = drafter(src, [1, 2, 77, 78])   # 3 replaced by two unknown tokens: one guess, then unaligned
    assert d.propose(4) is None
    d.extend([4])
    assert d.propose(3).tokens == [5, 6, 7]


def test_repeated_lines_prefer_the_occurrence_after_the_alignment():
    line = [20, 21, 22, 9]           # a line that occurs three times, each followed by something else
    src = line + [1] + line + [2] + line + [3]
    d = drafter(src)
    d.extend(line + [1] + [20])       # in step into the second copy
    d.extend([55, 56])                # diverges: 21 replaced by two unknown tokens -> unaligned
    d.extend([22])                    # 22 occurs in all three copies: the one after where it stood wins
    assert d.propose(1).tokens == [9] and d.propose(1).buckets[0] == "k1"
    d.extend([9])
    assert d.propose(1).tokens == [2]
    d.extend([2, 20, 21, 22, 9])
    assert d.propose(1).tokens == [3]


def test_nearest_before_when_nothing_follows():
    src = [1, 2, 3, 4, 5, 6]
    d = drafter(src, [1, 2, 3, 4, 5, 6])
    d.extend([2, 3])                  # the output goes back (a moved line): the only occurrence is before
    assert d.propose(3).tokens == [4, 5, 6]


def test_no_match_proposes_nothing():
    d = drafter([1, 2, 3], [1, 2, 3])
    d.extend([98, 99])
    assert d.propose(4) is None


def test_prefers_the_longest_suffix():
    src = [1, 7, 2, 6, 1, 2, 8]
    d = drafter(src, [1, 2])          # 2 departs from the source (7); [2] alone occurs nearer (-> 6),
    p = d.propose(1)                  # but [1, 2] occurs too, and a longer match is the likelier place
    assert p.tokens == [8] and p.buckets[0] == "k2"
