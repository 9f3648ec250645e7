"""``store.rows.decode``: the C scanner's fast path reads what json.loads reads, and every
text it does not read whole takes json.loads's way (or comes back as RawJSON)."""
import json

import pytest

from jobq_core import RawJSON
from jobq_core.store.rows import decode


@pytest.mark.parametrize("text", [
    "null", "true", "0", "-1.5e3", '"x"', '"\\ud83d\\ude00"', "[]", "{}", '{"i":1,"a":[1,2]}',
    ' {"i": 1} ', '\n[1]\t', "NaN", "Infinity", '{"a":{"b":{"c":[null]}}}',
])
def test_json_text_reads_as_json_loads_reads_it(text):
    value = decode(text)
    expected = json.loads(text)
    assert value == expected or (value != value and expected != expected)  # NaN
    assert type(value) is type(expected)


@pytest.mark.parametrize("text", ["", " ", "{", "1 2", "[1]]", "nul", "{'a': 1}", "\x00",
                                  "[" * 100_000])
def test_text_that_is_not_json_comes_back_raw(text):
    value = decode(text)
    assert isinstance(value, RawJSON) and value == text


def test_none_is_none_and_bytes_read_as_json():
    assert decode(None) is None
    assert decode(b'{"i": 1}') == {"i": 1}
