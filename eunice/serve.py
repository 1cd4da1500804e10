"""The server process: uvicorn (HTTP and websockets) plus the job cluster; what scripts/run execs.

SIGTERM or SIGINT stops it in order, within EUNICE_SHUTDOWN_GRACE_SECONDS + 10 s:
stop accepting connections, give running turns the grace period
(eunice/drain.py), close the rest as interrupted, close the sockets, stop the
job cluster (``manage.py jobs``, which has EUNICE_JOBS_STOP_SECONDS of its own),
exit 0. A watchdog ends the process if any step overruns that bound.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import uvicorn

logger = logging.getLogger("eunice.serve")

ROOT = Path(__file__).resolve().parent.parent
CLOSE_SECONDS = 3.0  # for sockets and requests still open once the turns are done
WATCHDOG_MARGIN = 10.0  # past the grace: the hard bound on stopping


class JobCluster:
    """``manage.py jobs`` as a child in its own process group, stopped with a bound."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "jobs"], cwd=ROOT, start_new_session=True
        )

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def stop(self, deadline: float) -> None:
        self.terminate()
        try:
            self.process.wait(timeout=max(0.5, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            logger.warning("the job cluster did not stop in time; killing it")
            self.kill()

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=5)


class DrainingServer(uvicorn.Server):
    """uvicorn, stopping as eunice/drain.py says rather than closing every socket at once."""

    def __init__(self, config: uvicorn.Config, *, grace: float, on_stop) -> None:  # noqa: ANN001
        super().__init__(config)
        self.grace = grace
        self.on_stop = on_stop

    def handle_exit(self, sig: int, frame) -> None:  # noqa: ANN001
        if not self.should_exit:
            self.on_stop()
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets=None) -> None:  # noqa: ANN001
        from eunice import drain

        for server in self.servers:  # no new connections; open sockets still stream their answers
            server.close()
        finished, interrupted = await drain.drain(self.grace)
        logger.info("stopping: %d turn(s) finished, %d interrupted", finished, interrupted)
        await super().shutdown(sockets)


def _config(fd: int | None = None) -> uvicorn.Config:
    """uvicorn as this project runs it; ``fd``: serve on that inherited socket (eunice/supervisor.py)."""
    from django.conf import settings

    # uvloop, httptools and the websockets library: the cheapest per streamed chunk
    # (bench/turns.py). Answers stream as many small messages, which compression
    # only makes dearer, so permessage-deflate is off. A frame over 1 MiB is refused
    # before it is read (a message holds at most EUNICE_MAX_MESSAGE_CHARS, 32,000 by default).
    return uvicorn.Config(
        "eunice.asgi:application",
        host=os.environ.get("HOST", "127.0.0.1"),
        port=int(os.environ.get("PORT", "8000")),
        fd=fd,
        loop="uvloop",
        http="httptools",
        ws="websockets",
        ws_per_message_deflate=False,
        ws_max_size=1 << 20,
        lifespan="off",
        log_level=os.environ.get("UVICORN_LOG_LEVEL", "info"),
        timeout_graceful_shutdown=math.ceil(CLOSE_SECONDS + settings.EUNICE_SHUTDOWN_GRACE_SECONDS),
    )


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m eunice.serve", description="Run Eunice's server.")
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("EUNICE_WORKERS", "1")),
        help="server processes on the one port (above 1 needs PostgreSQL and Redis; docs/operations.md)",
    )
    parser.add_argument("--fd", type=int, help=argparse.SUPPRESS)  # a supervisor's child: serve on this socket
    parsed = parser.parse_args(argv)
    if parsed.workers < 1:
        parser.error("--workers must be at least 1")
    return parsed


def main(argv: list[str] | None = None) -> int:
    args = arguments(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eunice.settings")
    import django

    django.setup()
    if args.workers > 1:
        return _supervise(args.workers)
    return _serve(args.fd)


def _supervise(workers: int) -> int:
    from eunice import supervisor

    refused = supervisor.refusal()
    if refused:
        print(f"eunice.serve: {refused}", file=sys.stderr)
        return 2
    sockets = supervisor.listeners(os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000")), workers)
    jobs = os.environ.get("EUNICE_JOBS", "1") != "0"
    return supervisor.Supervisor(workers, sockets, jobs=jobs).run()


def _serve(fd: int | None) -> int:
    from django.conf import settings

    grace = settings.EUNICE_SHUTDOWN_GRACE_SECONDS
    cluster = JobCluster() if os.environ.get("EUNICE_JOBS", "1") != "0" else None
    stopping: dict[str, float] = {}

    def on_stop() -> None:
        """The first SIGTERM/SIGINT: the cluster starts stopping alongside the turns; a watchdog bounds it all."""
        if stopping:
            return
        stopping["deadline"] = time.monotonic() + grace + WATCHDOG_MARGIN
        if cluster is not None:
            cluster.terminate()
        threading.Thread(target=_watchdog, args=(stopping["deadline"], cluster), daemon=True).start()

    # What uvicorn re-raises once it has stopped lands here, not in the default
    # handlers (which would end the process before the cluster is stopped).
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: on_stop())
    server = DrainingServer(_config(fd), grace=grace, on_stop=on_stop)
    try:
        server.run()
    finally:
        on_stop()
        if cluster is not None:
            cluster.stop(stopping["deadline"] - WATCHDOG_MARGIN / 2)
    return 0  # the execution log's writer flushes at exit (registry/execlog.py)


def _watchdog(deadline: float, cluster: JobCluster | None) -> None:
    time.sleep(max(0.0, deadline - time.monotonic()))
    logger.error("stopping took longer than the bound; exiting now")
    if cluster is not None and cluster.process.poll() is None:
        cluster.kill()
    os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
