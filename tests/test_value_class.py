"""The class values are made of (`ir.model.Value`): where the extension is built, the native
one (`ir/fast/_value.c`); its twin, the dataclass `ir.model.PyValue`, everywhere else. The
native class behaves as the dataclass does: constructor (by position, by name, defaults,
the same errors), attributes, equality, repr, pickling, `__match_args__`; and the native
code makes values of either class from a prototype of it."""

from __future__ import annotations

import copy
import gc
import operator
import os
import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leaks import bytes_grown

from meshdiag.ir import model
from meshdiag.ir.fast import native
from meshdiag.ir.fields import entry_values_py
from meshdiag.ir.model import PyValue, Value

Native = native("Value")
needs_native = pytest.mark.skipif(Native is None, reason="no native extension to compare")
NAMES = PyValue.__match_args__

field = st.one_of(
    st.none(),
    st.integers(-(2**70), 2**70),
    st.text(max_size=8),
    st.tuples(st.integers(0, 300), st.integers(0, 300)),
)


def _fields(v) -> tuple:
    return tuple(getattr(v, n) for n in NAMES)


@needs_native
def test_the_model_makes_native_values_where_built():
    assert model.Value is Native and Value is Native
    assert Native.__module__ == "meshdiag.ir.model" and Native.__qualname__ == "Value"
    assert Native.__match_args__ == PyValue.__match_args__
    assert not gc.is_tracked(Native("%a", 1, 2, "t", "sdy"))  # never in a cycle


def test_the_twin_is_the_class_without_the_extension():
    code = "from meshdiag.ir import model; print(model.Value is model.PyValue)"
    env = dict(os.environ, MESHDIAG_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr


@needs_native
@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(field, min_size=13, max_size=13), given_at=st.integers(5, 13), data=st.data()
)
def test_native_values_are_the_dataclasses(values, given_at, data):
    """The first `given_at` fields by position or by name (any of them), the rest left to
    their defaults: the same fields, repr, equality, pickling and copies."""
    by_name = data.draw(st.sets(st.integers(0, given_at - 1)))
    first = min(by_name, default=given_at)  # positional up to the first given by name
    args = values[:first]
    kwargs = {NAMES[i]: values[i] for i in range(first, given_at)}
    a, b = Native(*args, **kwargs), PyValue(*args, **kwargs)
    assert _fields(a) == _fields(b)
    assert repr(a) == repr(b)
    twin = Native(*_fields(a))
    assert (a == twin, a != twin) == (True, False)
    assert pickle.loads(pickle.dumps(a)) == a and copy.copy(a) == a
    # a field that differs makes them differ, as the dataclass's tuples do
    k = data.draw(st.integers(0, 12))
    other = list(_fields(a))
    other[k] = ("not", "this")
    assert (a == Native(*other)) == (b == PyValue(*other)) == (_fields(a)[k] == ("not", "this"))


def _outcome(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (the error's type is what is compared)
        return type(e)
    return None


@needs_native
def test_native_values_fail_as_the_dataclass_fails():
    bad = [
        ((), {}),
        (("%a", 1, 2, "t"), {}),
        (("%a", 1, 2, "t", "sdy"), {"name": "%b"}),
        (("%a", 1, 2, "t", "sdy"), {"bogus": 1}),
        (tuple(range(14)), {}),
        ((), {"name": "%a", "line": 1, "column": 2, "text": "t"}),
    ]
    for args, kwargs in bad:
        assert _outcome(Native, *args, **kwargs) is TypeError
        assert _outcome(PyValue, *args, **kwargs) is TypeError
    for cls in (Native, PyValue):
        v = cls("%a", 1, 2, "t", "sdy")
        assert _outcome(hash, v) is TypeError  # eq without frozen: unhashable
        assert _outcome(operator.lt, v, v) is TypeError
        assert (v == "%a", v != 1) == (False, True)
        v.shape = (4,)
        assert v.shape == (4,)
        del v.shape
        assert _outcome(getattr, v, "shape") is AttributeError
        assert _outcome(operator.eq, v, cls("%a", 1, 2, "t", "sdy")) is AttributeError
        assert _outcome(pickle.dumps, v) is not None
        assert _outcome(getattr, v, "other") is AttributeError
        assert _outcome(setattr, v, "other", 1) is AttributeError


@needs_native
@pytest.mark.parametrize("cls", [Native, PyValue], ids=["native", "dataclass"])
def test_values_made_from_a_prototype_are_of_its_class(cls):
    """The native readers copy a prototype of either class into a value of that class."""
    text = '#sdy.sharding<@mesh, [{"x"}]>'
    proto = cls("%p", 0, 0, text, "sdy", "op", None, None, None, None, "mesh")
    line = f"  func.func @f(%arg0: tensor<8x16xf32> {{sdy.sharding = {text}}}) -> f32 {{"
    spans = [(line.index("%arg0"), line.index(") ->"))]
    made: list = []
    twin: list = []
    got = native("entry_values")(line, spans, 0, 7, {proto.text: proto}, [], made)
    entry_values_py(line, spans, 0, 7, {proto.text: proto}, [], twin)
    assert got == 1 and type(made[0]) is cls and _fields(made[0]) == _fields(twin[0])
    assert (made[0].name, made[0].shape, made[0].dtype, made[0].line) == (
        "%arg0",
        (8, 16),
        "f32",
        7,
    )


@needs_native
def test_native_values_leak_nothing():
    held = ("%a", (8, 8), "a text")

    def call():
        v = Native(held[0], 1, 2, held[2], "sdy", shape=held[1])
        pickle.loads(pickle.dumps(v))
        repr(v)
        _outcome(Native, held[0], 1, 2, held[2], "sdy", bogus=1)

    call()
    before = [sys.getrefcount(x) for x in held]
    assert bytes_grown(call) < 20_000
    assert [sys.getrefcount(x) for x in held] == before


@needs_native
def test_a_field_that_changes_its_value_while_compared_or_shown_is_an_error_not_a_crash():
    """A field's __eq__ or __repr__ is Python code: one that deletes a field of its value
    meanwhile makes the comparison or the repr fail with AttributeError."""

    class Meddler:
        def __init__(self, v) -> None:
            self.v = v

        def _meddle(self) -> None:
            if hasattr(self.v, "hlo"):
                del self.v.hlo

        def __eq__(self, other: object) -> bool:
            self._meddle()
            return True

        __hash__ = None  # type: ignore[assignment]

        def __repr__(self) -> str:
            self._meddle()
            return "meddler"

    v = Native("%a", 1, 2, "t", "sdy")
    v.name = Meddler(v)
    assert _outcome(repr, v) is AttributeError
    w = Native("%a", 1, 2, "t", "sdy")
    w.name = Meddler(w)
    assert _outcome(operator.eq, w, Native("%a", 1, 2, "t", "sdy")) is AttributeError
