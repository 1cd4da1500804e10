"""Per-call cost of the one dispatch path, against a direct call and LangChain.

Prints µs/call, each over --calls calls (default 10,000):
  bare_us             the handler called directly
  dispatch_us         execute_tool: lookup, validation, routing, the Ok/Hint/Err
                      contract and its render; log off, telemetry off
  dispatch_traced_us  the same with telemetry on: an execute_tool span (batched to an
                      exporter that drops it) and the duration metric per call
  dispatch_logged_us  the same with the execution log on the configured database
                      (the final flush of buffered rows is included in the time)
  dispatch_thread_us  a handler not marked inline: it runs on a worker thread
                      so its timeout can be enforced
  langchain_us        langchain-core StructuredTool.invoke on the same function

Usage: python bench/dispatch.py [--calls N] [--json] [--database-url URL]
Without DATABASE_URL (or --database-url) it uses a throwaway SQLite file.
"""

from __future__ import annotations

import argparse
import time

import _django

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def add(inputs: dict, context: dict) -> str:
    return str(inputs["a"] + inputs["b"])


def per_call_us(fn, calls: int, after=None) -> float:
    for _ in range(min(calls // 10, 1000)):  # warm caches and validators
        fn()
    if after:
        after()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    if after:
        after()
    return (time.perf_counter() - start) / calls * 1e6


def traced(fn, calls: int) -> float:
    """``per_call_us`` with telemetry on, its spans batched to an exporter that drops them."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from eunice import telemetry

    class Dropped(SpanExporter):
        def export(self, spans):  # noqa: ANN001, ANN202
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Dropped()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry.install(tracer_provider, meter_provider)
    try:
        return per_call_us(fn, calls)
    finally:
        telemetry.uninstall()
        tracer_provider.shutdown()
        meter_provider.shutdown()


def install(registry, names) -> None:
    """A tool row for each of ``names`` (their old rows deleted), and ``add`` as the inline handler of bench_add."""
    from registry.models import ToolDefinition, ToolStatus, ToolType

    ToolDefinition.objects.filter(name__in=names).delete()
    for name in names:
        ToolDefinition.objects.create(
            name=name,
            description="Add two integers.",
            input_schema=SCHEMA,
            tool_type=ToolType.SYSTEM,
            status=ToolStatus.APPROVED,
            category="bench",
        )
    registry.register_handler("bench_add", add, inline=True)


def measure(registry, names, calls: int, log) -> dict[str, object]:
    from django.test import override_settings

    from registry.context import ToolContext

    install(registry, names)
    registry.register_handler("bench_add_threaded", add, inline=False)
    context = ToolContext(tenant_id="bench", user_id="bench")
    inputs = {"a": 2, "b": 3}
    assert registry.execute_tool("bench_add", inputs, context).content == "✓ ok. 1 row.\n5"

    results: dict[str, object] = {}
    results["bare_us"] = per_call_us(lambda: add(inputs, context), calls)
    # Through override_settings: the registry holds this setting (registry.hot_settings).
    log_off = override_settings(EXECUTION_LOG_ENABLED=False)
    log_off.enable()
    results["dispatch_us"] = per_call_us(lambda: registry.execute_tool("bench_add", inputs, context), calls)
    results["dispatch_traced_us"] = traced(lambda: registry.execute_tool("bench_add", inputs, context), calls)
    results["tracing_cost_us"] = results["dispatch_traced_us"] - results["dispatch_us"]
    results["dispatch_thread_us"] = per_call_us(
        lambda: registry.execute_tool("bench_add_threaded", inputs, context), calls
    )
    log_off.disable()
    results["log_flush_seconds"] = log.flush_seconds
    results["dispatch_logged_us"] = per_call_us(
        lambda: registry.execute_tool("bench_add", inputs, context), calls, after=log.flush
    )
    results["log_rows_dropped"] = log.dropped

    from langchain_core.tools import StructuredTool

    def lc_add(a: int, b: int) -> str:
        return add({"a": a, "b": b}, context)

    lc_tool = StructuredTool.from_function(func=lc_add, name="bench_add", description="Add two integers.")
    results["langchain_us"] = per_call_us(lambda: lc_tool.invoke(inputs), calls)
    results["dispatch_vs_langchain"] = results["langchain_us"] / results["dispatch_us"]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    database = _django.setup(args.database_url)

    from registry.execlog import writer
    from registry.models import ToolDefinition, ToolExecutionLog
    from registry.registry import get_registry

    registry = get_registry()
    names = ("bench_add", "bench_add_threaded")
    try:
        results = measure(registry, names, args.calls, writer())
    finally:
        ToolExecutionLog.objects.filter(tenant_id="bench").delete()
        ToolDefinition.objects.filter(name__in=names).delete()
    results = {"calls": args.calls, "database": database, **results}
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()
