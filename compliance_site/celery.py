"""The Celery application: queue `gpu` for scoring and explaining, `checks` for the long model
checks (the canary check after an activation, model comparisons), `default` for the rest.

Workers are started with `celery -A compliance_site worker -Q gpu,checks` on a GPU (model
work), or `-Q gpu` and `-Q checks` as two workers on a CPU (a check takes minutes there and must
not hold up scoring), and `-Q default` (everything else, the gathers that batch single
messages included); beat runs the sweeper and the monitoring refresh. See README, "Moving to
PostgreSQL, Redis and GPU workers".
"""

import os

from celery import Celery
from kombu import Queue
from kombu.transport import TRANSPORT_ALIASES

from core import queues

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compliance_site.settings")
# `filesystem://` (the embedded default) publishes each message whole (core/broker.py); kombu
# resolves a URL's scheme through this table, so every process that loads the app gets it.
TRANSPORT_ALIASES["filesystem"] = "core.broker:Transport"

app = Celery("compliance_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = tuple(Queue(name) for name in queues.ALL)
app.conf.task_routes = {
    "scoring.tasks.score_batch": {"queue": queues.GPU, "priority": queues.SCORING_PRIORITY},
    "scoring.tasks.shadow_score_batch": {"queue": queues.GPU, "priority": queues.SHADOW_PRIORITY},
    "scoring.tasks.compare_models": {"queue": queues.CHECKS, "priority": queues.CHECKS_PRIORITY},
    "explanations.tasks.explain_batch": {"queue": queues.GPU, "priority": queues.EXPLAIN_PRIORITY},
    "explanations.tasks.canary_check": {"queue": queues.CHECKS, "priority": queues.CHECKS_PRIORITY},
}
app.autodiscover_tasks()
