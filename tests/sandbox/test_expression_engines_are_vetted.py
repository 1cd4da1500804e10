"""Attack class: pandas' expression engines (``DataFrame.eval``/``query``, ``pd.eval``) as code.

Each attack is an approved custom tool called through ``execute_tool``. The
first two are the issue's: a backtick inside a string literal hid an attribute
walk from the old vetter (pandas reads it as part of the string), and
``resolvers=`` handed the expression a list to carry the answer out.
"""

import re

import pytest

from tests.conftest import text

pytestmark = pytest.mark.django_db

FRAME = "d = pd.DataFrame({'a': [1, 2], 'name': ['x', 'y']})\n"
IMPORT_OS = "a.__class__.__init__.__globals__.get('__builtins__').get('__import__').__self__.__import__('os')"

# The old vetter replaced `...` spans with a name: here the span starts and ends inside
# string literals, so it saw ['column'] while pandas walked to os.getuid().
ISSUE_ATTACK = (
    "sink = []\n"
    "try:\n"
    f"    d.eval(\"['`', s.append({IMPORT_OS}.getuid()), '`']\", resolvers=[{{'s': sink}}])\n"
    "except Exception as refusal:\n"
    "    sink.append(str(refusal))\n"
    "result = 'uid ' + str(sink)\n"
)


def test_the_issues_backtick_and_resolvers_attack_never_reaches_os(approved_tool, call):
    approved_tool("attack", FRAME + ISSUE_ATTACK)
    shown = text(call("attack"))
    assert re.search(r"uid \[\d", shown) is None, shown  # the old code showed "uid [65534]"
    assert "is not allowed in a custom tool" in shown


ATTACKS = {
    "backtick in a string literal, the answer in an error": (
        f"result = d.eval(\"['`', a.__class__.__init__.__globals__.__getitem__({IMPORT_OS}.getuid()), '`']\")\n"
    ),
    "backtick in a string literal in query": (f"result = d.query(\"a > 0 or ['`', {IMPORT_OS}.getcwd(), '`']\")\n"),
    "a dunder attribute without any backtick": "result = d.eval('a.__class__')\n",
    "a private attribute": "result = d.eval('a._mgr')\n",
    "a method call outside the allowlist": "result = d.eval('a.to_csv()')\n",
    "an @ local variable": "secret = 'x'\nresult = d.query('name == @secret')\n",
    "resolvers= alone": "result = d.eval('s', resolvers=[{'s': 1}])\n",
    "local_dict=": "result = d.eval('a + 1', local_dict={'a': 1})\n",
    "global_dict=": "result = d.eval('a + 1', global_dict={})\n",
    "level= (reaches the caller's frames)": "result = d.eval('a + 1', level=3)\n",
    "target=": "result = d.eval('b = a + 1', target={})\n",
    "the python parser (no backtick or @ rewriting)": "result = d.eval('a + 1', parser='python')\n",
    "the python engine": "result = d.query('a > 1', engine='python')\n",
    "a name that is not a column": "result = d.eval('Timestamp')\n",
    "a subscript": "result = d.eval('a[0]')\n",
    "eval through the class": "result = pd.DataFrame.eval(d, 'a.__class__')\n",
    "eval handed to pipe": "result = d.pipe(pd.DataFrame.eval, 'a.__class__')\n",
    "pd.eval": "result = pd.eval('1 + 1')\n",
}


@pytest.mark.parametrize("code", ATTACKS.values(), ids=ATTACKS.keys())
def test_expression_attacks_are_refused_by_the_language_layer(approved_tool, call, code):
    approved_tool("attack", FRAME + code)
    result = call("attack")
    assert result.error is not None, text(result)
    assert "[stopped by: language]" in result.error, result.error
    assert "uid [" not in result.content


EXPRESSIONS = {
    "a comparison": ("result = d.query('a > 1')", "y"),
    "and/or with a string literal": ("result = d.query('a >= 1 and name == \"y\"')", "y"),
    "a backtick-quoted column": (
        "e = d.rename(columns={'a': 'unit price'})\nresult = e.query('`unit price` > 1')",
        "y",
    ),
    "a backtick inside a string literal": ("result = d.query(\"name != '`'\")", "x"),
    "an @ inside a string literal": ("result = d.query(\"name != '@'\")", "x"),
    "in with a list": ("result = d.query('name in [\"x\"]')", "x"),
    "an allowed function": ("result = d.eval('sqrt(a * 8)').tolist()", "4.0"),
    "str.contains": ("result = d.query('name.str.contains(\"y\")')", "y"),
    "an assignment in eval": ("result = d.eval('b = a * 10\\nc = b + 1')", "21"),
    "the index": ("result = d.query('index > 0')", "y"),
}


@pytest.mark.parametrize(("code", "expected"), EXPRESSIONS.values(), ids=EXPRESSIONS.keys())
def test_ordinary_expressions_still_work(approved_tool, call, code, expected):
    approved_tool("expr", FRAME + code)
    result = call("expr")
    assert result.error is None, result.error
    assert expected in text(result)


def test_a_refusal_names_a_safe_equivalent(approved_tool, call):
    approved_tool("local", FRAME + "limit = 1\nresult = d.query('a > @limit')")
    error = call("local").error
    assert "@" in error and "f-string" in error
