"""What drf-spectacular needs to know about our own API classes (imported by eunice/api_urls.py)."""

from __future__ import annotations

from drf_spectacular.authentication import BasicScheme


class LockoutAwareBasicScheme(BasicScheme):
    """Our Basic auth is HTTP Basic in the schema (it only answers a lockout differently)."""

    target_class = "eunice.throttling.LockoutAwareBasicAuthentication"
