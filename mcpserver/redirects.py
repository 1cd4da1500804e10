"""Which redirect URIs an OAuth client of the MCP endpoint may register.

RFC 9700 wants https redirect URIs; RFC 8252 lets a native app (Claude Desktop, Claude
Code) receive its code on a loopback http port. django-oauth-toolkit allows a scheme
for every host alike, so ``http`` stays in its list and this rule narrows it: http
only to a loopback host. ``MCPServerConfig.ready`` adds it to the Application model's
validation, which dynamic client registration and the admin both run.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def check_redirect_uris(uris: str) -> None:
    """Raise ValidationError naming the first http redirect URI to a host that is not loopback."""
    for uri in uris.split():
        parts = urlsplit(uri)
        if parts.scheme == "http" and (parts.hostname or "") not in LOOPBACK_HOSTS:
            raise ValidationError(
                {
                    "redirect_uris": (
                        f"{uri}: an http redirect URI must go to a loopback address "
                        "(127.0.0.1, [::1] or localhost, as a native app listens); elsewhere use https"
                    )
                }
            )


def narrow_application_validation() -> None:
    """Make the toolkit's Application.clean also run ``check_redirect_uris``."""
    from oauth2_provider.models import get_application_model

    application = get_application_model()
    toolkit_clean = application.clean
    if getattr(toolkit_clean, "narrowed_by_eunice", False):
        return

    def clean(self):  # noqa: ANN001, ANN202 - the model's own signature
        toolkit_clean(self)
        check_redirect_uris(self.redirect_uris or "")

    clean.narrowed_by_eunice = True  # type: ignore[attr-defined]
    application.clean = clean
