"""Django's PostgreSQL backend, with health checks only for connections that may have gone stale."""
