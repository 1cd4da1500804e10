"""A loopback HTTP proxy in front of a Streamable HTTP MCP server that breaks tools/call on request.

``mode`` is read per request: ``pass`` forwards everything; for a tools/call POST,
``500`` answers HTTP 500, ``slow`` waits ``delay`` seconds before forwarding, and
``drop`` forwards the call but closes the response stream after its headers.
Every other request (initialize, tools/list, the GET stream) is forwarded as is.
"""

from __future__ import annotations

import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "transfer-encoding", "keep-alive", "content-length", "host"}


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.mode = "pass"
        self.delay = 5.0
        self.calls = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # bodies end when the connection closes: streams pass through

            def do_GET(self):  # noqa: N802
                proxy.forward(self, b"")

            def do_DELETE(self):  # noqa: N802
                proxy.forward(self, b"")

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if b'"tools/call"' in body:
                    proxy.calls += 1
                    if proxy.mode == "500":
                        self.send_response(500)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    if proxy.mode == "slow":
                        time.sleep(proxy.delay)
                proxy.forward(self, body, drop=proxy.mode == "drop" and b'"tools/call"' in body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}{self.upstream.path}"

    def forward(self, handler: BaseHTTPRequestHandler, body: bytes, *, drop: bool = False) -> None:
        upstream = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            upstream.request(handler.command, self.upstream.path, body=body or None, headers=headers)
            response = upstream.getresponse()
            handler.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.flush()
            if drop:
                return  # the stream ends before the answer: the connection closes
            while chunk := response.read1(65536):
                handler.wfile.write(chunk)
                handler.wfile.flush()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            upstream.close()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
