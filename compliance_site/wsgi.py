import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compliance_site.settings")
application = get_wsgi_application()


def _warn_about_the_database() -> None:
    """Runs once per web process (runserver loads this module when it starts serving)."""
    from django.conf import settings

    from core.db import sqlite_concurrency_warning

    warning = sqlite_concurrency_warning(settings.DATABASES["default"])
    if warning:
        logging.getLogger("compliance_site").warning(warning)


_warn_about_the_database()
