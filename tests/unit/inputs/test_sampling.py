"""The seeded sampler every sample of the harness is drawn with."""

from harness.inputs.sampling import sample


def test_sample_is_seeded_and_bounded():
    items = list(range(100))
    assert sample(items, 10, 42) == sample(items, 10, 42) != sample(items, 10, 1)
    assert len(set(sample(items, 10, 42))) == 10
    assert sample(items, None, 42) is items and sample(items, 500, 0) is items


def test_in_order_keeps_the_same_items_in_their_original_order():
    items = [f"item {index}" for index in range(50)]
    drawn = sample(items, 12, 7)
    ordered = sample(items, 12, 7, in_order=True)
    assert drawn != ordered and sorted(drawn, key=items.index) == ordered
