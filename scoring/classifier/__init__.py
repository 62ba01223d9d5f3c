"""The classifier: training, artifacts, and the Scorer that runs a model version.

`scorer_for(version)` is the one default every caller that runs a model version uses (the
scoring step, shadow scoring, explanations, the offline reports, model comparisons); each of them
takes a `scorer_factory` (or `scorer_for`) argument that tests replace. It is here, in the
package's light `__init__`, and imports scoring.classifier.loading (torch, the Scorer) only when
called, so that importing a caller loads no model code: a web process imports the services
without torch, and nothing model-related is loaded in a Celery parent before the fork."""

from __future__ import annotations


def scorer_for(version):
    """The process's Scorer of this ModelVersion (scoring.classifier.loading.get_scorer: loaded
    once per artifact, raises ModelNotReady when it cannot be)."""
    from scoring.classifier.loading import get_scorer

    return get_scorer(version)
