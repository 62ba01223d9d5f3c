"""The Celery queue names, in one place (pure constants: the celery app imports this before
Django is set up).

- GPU: model work (scoring.tasks.score_batch, scoring.tasks.shadow_score_batch,
  explanations.tasks.explain_batch);
- CHECKS: the long model checks (explanations.tasks.canary_check, scoring.tasks.compare_models);
- DEFAULT: everything else (gathers, the sweepers, audit checkpoints, monitoring).

compliance_site.celery routes tasks with these; the settings SCORING_QUEUE, EXPLAIN_QUEUE and
CHECKS_QUEUE default to them. docker-compose.yml, Procfile.dev and the Makefile name the same
queues in their worker command lines (`-Q gpu,checks`, `-Q default`)."""

DEFAULT = "default"
GPU = "gpu"
CHECKS = "checks"

ALL = (DEFAULT, GPU, CHECKS)
