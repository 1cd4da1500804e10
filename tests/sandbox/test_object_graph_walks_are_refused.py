"""Attack class: walking the object graph to builtins, frames and globals."""

import pytest

from tests.sandbox.conftest import run

WALKS = {
    "dunder class walk": "result = ().__class__.__bases__[0].__subclasses__()",
    "function globals": "def f(): pass\nresult = f.__globals__",
    "generator frame walk": "def g():\n    yield 1\nit = g()\nresult = it.gi_frame.f_back.f_globals",
    "getattr with a dunder string": "result = getattr(df, '__class__')",
    "fullwidth dunder identifiers": "result = ().\uff3f\uff3fclass\uff3f\uff3f",
    "fullwidth module name": "result = \uff50\uff44",
    "str.format attribute walk": "result = '{0.__class__}'.format(1)",
    "traceback frame walk": "try:\n    1/0\nexcept Exception as e:\n    result = e.__traceback__",
    "builtins by name": "result = __builtins__",
    "exec of a string": "exec('x = 1')",
    "eval of a string": "result = eval('1 + 1')",
}


@pytest.mark.parametrize("code", WALKS.values(), ids=WALKS.keys())
def test_object_graph_walks_are_stopped_by_the_language_layer(code):
    outcome = run(code)
    assert not outcome.ok
    assert outcome.stopped_by == "language", outcome.error


def test_a_generator_frame_is_refused_even_through_getattr():
    outcome = run("def g():\n    yield 1\nresult = getattr(g(), 'gi_frame')")
    assert outcome.stopped_by == "language"
