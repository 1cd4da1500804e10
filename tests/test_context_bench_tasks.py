"""bench/context.py's task set holds what the issue asks of it: twenty or more multi-step
tasks, each scripted both ways, the program compiling under the sandbox's rules and making
the same calls as the ordinary script, in the same order."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

from registry.sandbox.runner import compile_tool


def _bench_module(name: str):  # noqa: ANN202 - a module
    """A bench/ module loaded from its file. Not by putting bench/ on sys.path: bench/mcp.py
    would then shadow the mcp SDK for every test after this one (every MCP connect hung)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent.parent / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


TASKS = _bench_module("context_tasks").TASKS

TOP = ("north", "4170")


def calls_of(code: str) -> list[str]:
    """The tools the program calls, in source order."""
    found = [
        (node.lineno, node.col_offset, node.args[0].value)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "call"
    ]
    return [name for _, _, name in sorted(found)]


def test_there_are_at_least_twenty_tasks_with_unique_names():
    assert len(TASKS) >= 20
    assert len({task.name for task in TASKS}) == len(TASKS)


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.name)
def test_the_program_compiles_and_makes_the_ordinary_scripts_calls(task):
    compile_tool(task.code())  # raises ToolCodeError with every problem
    ordinary = [turn["tool_uses"][0]["name"] for turn in task.ordinary("answer", TOP) if "tool_uses" in turn]
    assert calls_of(task.code()) == ordinary
    assert len(ordinary) >= 4  # find, look, at least one query, chart


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.name)
def test_both_scripts_check_the_reference_answer_and_end_with_the_same_text(task):
    ordinary, program = task.ordinary("the answer", TOP), task.program("the answer", TOP)
    assert ordinary[-1]["text"] == program[-1]["text"] == ["the answer"]
    assert [turn.get("expect") for turn in ordinary if "expect" in turn] == [{"tool_result_contains": "north | 4170"}]
    assert program[-1]["expect"] == {"tool_result_contains": "north: 4170"}
