"""The Celery application: queue `gpu` for scoring and explaining, `default` for the rest.

Workers are started with `celery -A compliance_site worker -Q gpu` (model work) and
`-Q default` (everything else, the gathers that batch single messages included); beat runs
the sweeper and the monitoring refresh. See README, "Moving to PostgreSQL, Redis and GPU workers".
"""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compliance_site.settings")

app = Celery("compliance_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("gpu"))
app.conf.task_routes = {
    "scoring.tasks.score_batch": {"queue": "gpu"},
    "scoring.tasks.shadow_score_batch": {"queue": "gpu"},
    "scoring.tasks.compare_models": {"queue": "gpu"},
    "explanations.tasks.explain_batch": {"queue": "gpu"},
}
app.autodiscover_tasks()
