"""``manage.py jobs``: the django-q2 cluster, with a bounded stop and no orphans.

What ``qcluster`` is, plus: every process of the cluster dies with its parent
(killing the cluster's main process no longer leaves its workers running,
eunice/orphans.py); SIGTERM stops it within EUNICE_JOBS_STOP_SECONDS (workers
still busy then are killed, and their jobs re-run at the next start,
registry/background.py); and a parent that goes away stops it too.
"""

from __future__ import annotations

import logging
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand
from django_q.cluster import Cluster

from eunice.orphans import children_die_with_their_parent, die_with_parent

logger = logging.getLogger("eunice.jobs")


class BoundedCluster(Cluster):
    """A cluster whose stop is bounded: past the limit, the sentinel is killed (its workers die with it)."""

    def sig_handler(self, signum, frame) -> None:  # noqa: ANN001
        if self.sentinel is not None and self.sentinel.is_alive():
            timer = threading.Timer(settings.EUNICE_JOBS_STOP_SECONDS, self._kill_sentinel)
            timer.daemon = True
            timer.start()
        super().sig_handler(signum, frame)

    def _kill_sentinel(self) -> None:
        if self.sentinel is not None and self.sentinel.is_alive():
            logger.warning(
                "jobs still running after %.0f s; stopping their workers (the jobs re-run at the next start)",
                settings.EUNICE_JOBS_STOP_SECONDS,
            )
            self.sentinel.kill()


class Command(BaseCommand):
    help = "Run the background-job cluster (django-q2), stopping within EUNICE_JOBS_STOP_SECONDS."

    def handle(self, *args, **options) -> None:
        settings.SECRET_KEY  # noqa: B018 (tasks are signed with it)
        die_with_parent(signal.SIGTERM)  # the server that started us is gone: stop, as on SIGTERM
        children_die_with_their_parent()
        cluster = BoundedCluster()
        cluster.start()
        # The process then waits for the sentinel (multiprocessing joins it at exit);
        # SIGTERM/SIGINT reach BoundedCluster.sig_handler meanwhile.
