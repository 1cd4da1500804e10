"""OpenTelemetry traces and metrics, when an operator asks for them (docs/operations.md).

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or its ``_TRACES_`` / ``_METRICS_`` variant)
is set: then ``start`` builds the SDK's providers with OTLP/HTTP exporters, which read
the standard ``OTEL_*`` variables themselves (headers, timeouts, sampler, batch sizes,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``). While it is off nothing here
imports the SDK, and the instrumented code pays one attribute read per call:
``telemetry.state.on``.

The execution log in the database stays the record of every call; spans are a copy
for the tools operators already run. What the spans say is the instrumented code's
business (``registry.tracing``, ``llm.tracing``); this module only holds the tracer,
the meter and the content-capture switch they share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

from eunice.env import env_bool, env_str

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider

SCOPE = "eunice"
# gen_ai.client.operation.duration and gen_ai.execute_tool.duration, as the conventions advise.
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
# The GenAI conventions' switch. SPAN_ONLY / SPAN_AND_EVENT / NO_CONTENT / EVENT_ONLY are
# the names opentelemetry-util-genai reads; Eunice writes content only on spans.
CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CAPTURE_VALUES = {"span_only": True, "span_and_event": True, "no_content": False, "event_only": False}


class State:
    """What the instrumented code reads: ``on``, and while on, the instruments."""

    __slots__ = ("on", "capture_content", "tracer", "tool_duration", "chat_duration", "token_usage", "providers")

    def __init__(self) -> None:
        self.on = False
        self.capture_content = False
        self.tracer: Tracer | None = None
        self.tool_duration: Histogram | None = None
        self.chat_duration: Histogram | None = None
        self.token_usage: Histogram | None = None
        self.providers: tuple[Any, ...] = ()


state = State()


def wanted() -> tuple[bool, bool]:
    """Whether the environment asks for (traces, metrics). Raises ImproperlyConfigured for
    an exporter protocol this build cannot speak."""
    if env_bool("OTEL_SDK_DISABLED", False):
        return False, False
    endpoint = env_str("OTEL_EXPORTER_OTLP_ENDPOINT").strip()
    traces = bool(endpoint or env_str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").strip())
    metrics = bool(endpoint or env_str("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").strip())
    traces &= env_str("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none"
    metrics &= env_str("OTEL_METRICS_EXPORTER", "otlp").strip().lower() != "none"
    protocol = env_str("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf").strip()
    if (traces or metrics) and protocol != "http/protobuf":
        raise ImproperlyConfigured(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported; Eunice exports OTLP over "
            "HTTP only: use 'http/protobuf' (the default), or unset it."
        )
    return traces, metrics


def capture_content() -> bool:
    """The content-capture switch: a boolean, or one of util-genai's mode names."""
    raw = env_str(CAPTURE).strip().lower()
    if raw in _CAPTURE_VALUES:
        return _CAPTURE_VALUES[raw]
    try:
        return env_bool(CAPTURE, False)
    except ImproperlyConfigured:
        raise ImproperlyConfigured(
            f"{CAPTURE}={raw!r} is neither a boolean nor one of SPAN_ONLY, SPAN_AND_EVENT, NO_CONTENT, EVENT_ONLY."
        ) from None


def start() -> bool:
    """Export traces and metrics if the environment asks for them (once, at startup).

    Sets the SDK's providers as the process's global ones too, so that the spans the
    ``mcp`` and ``anthropic`` SDKs make join Eunice's. Returns whether telemetry is on.
    """
    traces, metrics = wanted()
    if not (traces or metrics) or state.on:
        return state.on
    from opentelemetry import metrics as metrics_api
    from opentelemetry import trace as trace_api

    tracer_provider, meter_provider = exporting(traces=traces, metrics=metrics)
    if tracer_provider is not None:
        trace_api.set_tracer_provider(tracer_provider)
    if meter_provider is not None:
        metrics_api.set_meter_provider(meter_provider)
    install(tracer_provider, meter_provider)
    return True


def exporting(*, traces: bool, metrics: bool) -> tuple[Any, Any]:
    """The SDK's (tracer, meter) providers exporting over OTLP/HTTP as the ``OTEL_*``
    variables say (None for a signal not asked for). Spans go in batches, metrics every
    ``OTEL_METRIC_EXPORT_INTERVAL`` ms; both flush when the process exits."""
    resource = _resource()
    tracer_provider = meter_provider = None
    if traces:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        tracer_provider = SDKTracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if metrics:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider as SDKMeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        meter_provider = SDKMeterProvider(
            resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
        )
    return tracer_provider, meter_provider


def _resource() -> Any:
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    # OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, and "eunice" for a service they leave unnamed.
    detected = Resource.create()
    if str(detected.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        detected = detected.merge(Resource({SERVICE_NAME: "eunice"}))
    return detected


def install(tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None) -> None:
    """Instrument with these providers (``start``'s, or a test's in-memory ones); either may
    be None for none of that signal. Reads the content-capture switch."""
    from opentelemetry import metrics as metrics_api
    from opentelemetry import trace as trace_api

    state.capture_content = capture_content()
    state.tracer = tracer_provider.get_tracer(SCOPE) if tracer_provider is not None else trace_api.NoOpTracer()
    meter = meter_provider.get_meter(SCOPE) if meter_provider is not None else metrics_api.NoOpMeter(SCOPE)
    state.tool_duration = meter.create_histogram(
        "gen_ai.execute_tool.duration",
        unit="s",
        description="Duration of tool executions",
        explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
    )
    state.chat_duration = meter.create_histogram(
        "gen_ai.client.operation.duration",
        unit="s",
        description="GenAI operation duration",
        explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
    )
    state.token_usage = meter.create_histogram(
        "gen_ai.client.token.usage",
        unit="{token}",
        description="Number of input and output tokens used",
        explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
    )
    state.providers = tuple(p for p in (tracer_provider, meter_provider) if p is not None)
    state.on = True


def uninstall() -> None:
    """Stop instrumenting (tests): what the providers hold is theirs to flush and shut down."""
    state.on = False
    state.tracer = state.tool_duration = state.chat_duration = state.token_usage = None
    state.providers = ()
