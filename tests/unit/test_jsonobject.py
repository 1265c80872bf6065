"""prsd/spool/jsonobject.py: a JSON object decoded, anything else refused by kind."""

from __future__ import annotations

import pytest

from prsd.spool.jsonobject import NotAnObject, decode_object


@pytest.mark.parametrize("data", [b'{"a": [1, 2]}', '{"a": [1, 2]}', b' {"a":[1,2]}\n'])
def test_an_object_comes_back_as_a_dict(data: bytes | str) -> None:
    assert decode_object(data) == {"a": [1, 2]}


@pytest.mark.parametrize(
    ("data", "value"),
    [(b"[1]", [1]), (b'"x"', "x"), (b"3", 3), (b"true", True), (b"null", None)],
)
def test_json_that_is_no_object_is_refused_with_its_value(data: bytes, value: object) -> None:
    with pytest.raises(NotAnObject) as caught:
        decode_object(data)
    assert caught.value.value == value
    assert "where a JSON object is expected" in str(caught.value)


@pytest.mark.parametrize("data", [b"", b"{", b"nope", b"\xff\xfe{}", "{'a': 1}"])
def test_what_is_not_json_is_a_value_error_but_no_not_an_object(data: bytes | str) -> None:
    with pytest.raises(ValueError) as caught:
        decode_object(data)
    assert not isinstance(caught.value, NotAnObject)
