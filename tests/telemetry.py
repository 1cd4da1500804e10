"""The SDK's in-memory exporters behind ``eunice.telemetry``, as the ``otel`` fixture gives them."""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from eunice import telemetry


@dataclass
class Recorded:
    """What the instrumented code exported: finished spans, and metric points on demand."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def span(self, name: str) -> ReadableSpan:
        found = [s for s in self.exporter.get_finished_spans() if s.name == name]
        assert len(found) == 1, [s.name for s in self.exporter.get_finished_spans()]
        return found[0]

    def points(self, metric: str) -> list:
        """The data points of ``metric`` (histograms: count, sum, attributes)."""
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for each in scope.metrics:
                    if each.name == metric:
                        found += list(each.data.data_points)
        return found


def installed() -> tuple[Recorded, TracerProvider, MeterProvider]:
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.install(tracer_provider, meter_provider)
    return Recorded(exporter, reader), tracer_provider, meter_provider
