"""The Celery queue names, in one place (pure constants: the celery app imports this before
Django is set up).

- GPU: model work (scoring.tasks.score_batch, scoring.tasks.shadow_score_batch,
  explanations.tasks.explain_batch);
- CHECKS: the long model checks (explanations.tasks.canary_check, scoring.tasks.compare_models);
- DEFAULT: everything else (gathers, the sweepers, audit checkpoints, monitoring).

compliance_site.celery routes tasks with these; the settings SCORING_QUEUE, EXPLAIN_QUEUE and
CHECKS_QUEUE default to them. docker-compose.yml, Procfile.dev and the Makefile name the same
queues in their worker command lines (`-Q gpu,checks`, `-Q default`).

On the gpu queue, scoring goes before explanations and explanations before shadow scoring:
scoring decides where a message goes (a message not scored is not in anyone's queue), an
explanation only completes what a reviewer will read, and shadow scores are for a comparison.
The checks queue's tasks (a canary check, a model comparison: minutes of model work) rank with
shadow scoring, because a GPU worker consumes `-Q gpu,checks` and takes the lists of both queues
in priority order.
On Redis a worker takes the waiting message of the lowest priority number first (kombu's
priority steps 0, 3, 6, 9: 0 is first, a message without one counts as 0), so a batch published
again after a crash, or new mail during a backlog of explanations, waits for at most the batch a
worker holds. The embedded filesystem broker has no priorities: it delivers in publish order."""

DEFAULT = "default"
GPU = "gpu"
CHECKS = "checks"

ALL = (DEFAULT, GPU, CHECKS)

# kombu's Redis priorities, lowest number first (see the docstring)
SCORING_PRIORITY = 0
EXPLAIN_PRIORITY = 3
SHADOW_PRIORITY = 6
CHECKS_PRIORITY = 6
