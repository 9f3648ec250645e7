"""encode_json reuses one C encoder built through CPython's private
``json.encoder.c_make_encoder`` (new_jobs._one_encoder; its gain: bench/encode_ab.py). These
tests fail if that hook changes shape: if it is gone or takes other arguments on CPython,
or if what it writes differs in any way from the public ``json.JSONEncoder`` with the same
options."""
import json
import math
import platform

import pytest

from jobq_core import encode_json
from jobq_core.api import new_jobs

PUBLIC = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)

VALUES = [
    None, True, False, 0, -1, 2**63, 10**40, 1.5, -0.0, 1e-7, 1e300, 0.1 + 0.2, "", "plain",
    "quote \" backslash \\ tab \t newline \n nul \x00 del \x7f", "é ü 漢字 🙂 \u2028",
    [], {}, [1, [2, [3, {"a": [None]}]]], (1, 2), {"b": 1, "a": 2},
    {1: "int key", 2.5: "float key", True: "bool key", None: "none key"},
    {"nested": {"list": [1.25, "x", {"k": False}], "empty": {}}},
]


@pytest.mark.skipif(platform.python_implementation() != "CPython",
                    reason="the reused encoder is CPython's C one")
def test_on_cpython_the_private_hook_is_there_and_used():
    assert callable(getattr(json.encoder, "c_make_encoder", None))
    assert new_jobs._encode is not new_jobs._JSON.encode


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_the_reused_encoder_writes_what_the_public_encoder_writes(value):
    assert new_jobs._encode(value) == PUBLIC.encode(value)
    assert encode_json(value) == PUBLIC.encode(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1, math.nan]])
def test_nan_and_infinity_are_refused_as_the_public_encoder_refuses_them(value):
    with pytest.raises(ValueError):
        PUBLIC.encode(value)
    with pytest.raises(ValueError, match="payload is not JSON-serializable"):
        encode_json(value)


@pytest.mark.parametrize("value", [object(), {"a": {1, 2}}, b"bytes", {(1, 2): "tuple key"}])
def test_what_json_cannot_write_is_a_type_error_naming_the_argument(value):
    with pytest.raises(TypeError):
        PUBLIC.encode(value)
    with pytest.raises(TypeError, match="result is not JSON-serializable"):
        encode_json(value, "result")


def test_a_value_that_contains_itself_is_refused_without_a_circular_check():
    looped: list = []
    looped.append(looped)
    with pytest.raises(ValueError, match="refers to itself, or is nested too deeply"):
        encode_json(looped)
    assert encode_json({"after": [1]}) == '{"after":[1]}'
