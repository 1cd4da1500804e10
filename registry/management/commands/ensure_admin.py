import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Create the staff login on first run, from EUNICE_ADMIN_USER/EUNICE_ADMIN_PASSWORD; "
        "without a password, generate one and print it once. The login is a member of "
        "EUNICE_ADMIN_TENANT, so it can chat straight away."
    )

    def handle(self, *args, **options) -> None:
        from registry.models import TenantMembership

        User = get_user_model()
        username = settings.EUNICE_ADMIN_USER
        existing = User.objects.filter(username=username).first()
        if existing is not None:
            TenantMembership.objects.get_or_create(user=existing, defaults={"tenant_id": settings.EUNICE_ADMIN_TENANT})
            return
        password = settings.EUNICE_ADMIN_PASSWORD
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=username, email="", password=password)
        TenantMembership.objects.create(user=user, tenant_id=settings.EUNICE_ADMIN_TENANT)
        if generated:
            self.stdout.write(
                f"Created staff login {username!r} with password {password!r} (shown once; change it in the admin)."
            )
        else:
            self.stdout.write(f"Created staff login {username!r} from EUNICE_ADMIN_PASSWORD.")
