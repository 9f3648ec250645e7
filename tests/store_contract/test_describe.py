"""What a store says about itself."""


def test_describe_names_the_store_and_every_value_is_text(queue, adapter):
    info = queue.describe()
    assert info["store"] == adapter.name
    assert all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in info.items())


def test_a_writable_store_is_not_frozen(queue):
    assert queue.frozen is False
