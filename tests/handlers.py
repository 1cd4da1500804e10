"""Handlers used by the dispatch tests; each exists to show one behaviour."""

import asyncio
import threading

released = threading.Event()


def echo(inputs, context):
    return {"message": f"echo {inputs}", "metadata": {"reasoning": context.get("_reasoning")}}


def boom(inputs, context):
    raise ZeroDivisionError("division by zero in step 3")


def slow(inputs, context):
    released.wait(5)
    return "finally"


async def async_echo(inputs, context):
    await asyncio.sleep(0)
    return f"async {inputs.get('word', '')}"


async def async_slow(inputs, context):
    await asyncio.sleep(30)
    return "never"
