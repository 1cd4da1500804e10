"""Telemetry is off unless asked for, and when asked, reaches an OTLP/HTTP receiver.

The receiver is a tiny HTTP server this module starts on loopback: it decodes each
export request with opentelemetry-proto's message types, as a collector would.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from eunice import telemetry
from registry.context import ToolContext

ROOT = Path(__file__).resolve().parent.parent
MAX_BODY = 4 * 1024 * 1024
SIGNALS = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
}


class Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: queue.Queue = queue.Queue()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def drained(self) -> list:
        found = []
        while not self.received.empty():
            found.append(self.received.get_nowait())
        return found


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        signal = SIGNALS.get(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if signal is None or not 0 < length <= MAX_BODY:
            self.send_error(404 if signal is None else 413)
            return
        message = signal[0]()
        message.ParseFromString(self.rfile.read(length))
        self.server.received.put((self.path, self.headers.get("Content-Type"), message))
        body = signal[1]().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def receiver():
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def attributes(items) -> dict:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in items}


def add(inputs: dict, context: ToolContext) -> str:
    return str(inputs["a"] + inputs["b"])


@pytest.mark.django_db
def test_spans_and_the_duration_metric_reach_the_otlp_receiver(receiver, monkeypatch, make_tool, call):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "eunice-under-test")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=ops")
    assert telemetry.wanted() == (True, True)
    tracer_provider, meter_provider = telemetry.exporting(traces=True, metrics=True)
    telemetry.install(tracer_provider, meter_provider)
    try:
        make_tool("t_add", add, input_schema={"type": "object", "properties": {"a": {}, "b": {}}})
        call("t_add", context={"tool_use_id": "toolu_9"}, a=1, b=2)
    finally:
        telemetry.uninstall()
        tracer_provider.shutdown()  # flushes the batch
        meter_provider.shutdown()  # and the last metrics collection

    received = receiver.drained()
    traces = [m for path, kind, m in received if path == "/v1/traces"]
    assert {kind for _, kind, _ in received} == {"application/x-protobuf"}
    spans = [
        (attributes(rs.resource.attributes), span)
        for request in traces
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    ((resource, span),) = [(r, s) for r, s in spans if s.name == "execute_tool t_add"]
    assert resource["service.name"] == "eunice-under-test"
    assert attributes(span.attributes)["gen_ai.tool.call.id"] == "toolu_9"
    assert attributes(span.attributes)["eunice.envelope"] == "ok"

    metrics = [
        metric
        for path, _, request in received
        if path == "/v1/metrics"
        for rm in request.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    ]
    durations = [m for m in metrics if m.name == "gen_ai.execute_tool.duration"]
    assert durations and durations[0].unit == "s"
    assert sum(p.count for p in durations[-1].histogram.data_points) == 1


@pytest.mark.parametrize(
    "environment, expected",
    [
        ({}, (False, False)),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, (True, False)),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_METRICS_EXPORTER": "none"}, (True, False)),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}, (False, False)),
    ],
)
def test_what_the_environment_turns_on(monkeypatch, environment, expected):
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert telemetry.wanted() == expected


def test_a_protocol_other_than_http_protobuf_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(ImproperlyConfigured, match="OTEL_EXPORTER_OTLP_PROTOCOL='grpc' is not supported"):
        telemetry.wanted()


def test_with_no_endpoint_the_sdk_and_the_span_code_are_never_imported():
    probe = (
        "import sys, django; django.setup();"
        "import registry.registry, llm.roles, conversations.loop, conversations.dispatcher;"
        "from eunice import telemetry;"
        "print(telemetry.state.on,"
        " any(m.startswith(('opentelemetry.sdk.trace', 'opentelemetry.exporter'))"
        " for m in sys.modules),"
        " 'registry.tracing' in sys.modules)"
    )
    # Not opentelemetry.sdk as a whole: redis-py 8 imports the SDK's metrics package
    # itself on `import redis` whenever the SDK is installed, so with REDIS_URL set it
    # is there (with the SDK's resources) before any code of ours runs. What only we
    # would load is the SDK's tracer and the exporter.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment["DJANGO_SETTINGS_MODULE"] = "eunice.test_settings"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=150
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False", "False"]


def test_the_service_is_named_eunice_unless_the_environment_names_it(monkeypatch):
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    assert telemetry._resource().attributes["service.name"] == "eunice"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=eunice-eu,deployment.environment=prod")
    assert telemetry._resource().attributes["service.name"] == "eunice-eu"
