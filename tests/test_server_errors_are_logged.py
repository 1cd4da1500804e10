"""A view's unhandled exception (a 500) reaches the console log with its traceback, and only there."""

import io
import logging

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import path

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


def broken_view(request):
    raise ZeroDivisionError("the ledger divided by zero")


urlpatterns = [path("broken/", broken_view)]


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def console():
    """What the configured console handlers of django.request print, captured while a test runs."""
    handlers = [h for h in logging.getLogger("django.request").handlers if isinstance(h, logging.StreamHandler)]
    assert handlers, "django.request has no console handler: a 500 would be logged nowhere"
    buffer = io.StringIO()
    previous = [handler.setStream(buffer) for handler in handlers]
    yield buffer
    for handler, stream in zip(handlers, previous, strict=True):
        handler.setStream(stream)


@pytest.fixture
def records():
    handler = Records()
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


def test_a_view_that_raises_is_logged_at_error_with_its_traceback_and_the_client_sees_none(console, records):
    client = Client(raise_request_exception=False)
    client.force_login(get_user_model().objects.create_user("reader"))

    response = client.get("/broken/")

    assert response.status_code == 500
    assert b"ZeroDivisionError" not in response.content and b"ledger" not in response.content
    (record,) = [r for r in records if r.name == "django.request"]
    assert record.levelno == logging.ERROR and record.exc_info[0] is ZeroDivisionError
    printed = console.getvalue()
    assert "ERROR django.request: Internal Server Error: /broken/" in printed
    assert "Traceback (most recent call last)" in printed and "the ledger divided by zero" in printed


@pytest.mark.parametrize("name", ["django.channels", "daphne", "uvicorn.error"])
def test_the_servers_own_errors_reach_the_console(name):
    logger = logging.getLogger(name)
    assert logger.isEnabledFor(logging.ERROR)
    assert any(isinstance(handler, logging.StreamHandler) for handler in logger.handlers)
