"""Writes of the offline judgements: the faithfulness report of a model version and the canary
check recorded at each activation (explanations.evaluation does the computing)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction

from explanations.corpus import CorpusUnavailable, canary_ids, read_rows
from explanations.errors import ReportError
from explanations.evaluation import canary_details, compare_canaries, compare_methods, flagged_rows
from explanations.faithfulness import K_MAX, K_MIN, K_PERCENT, PASS_RULE, RANDOM_DRAWS
from explanations.models import CanaryCheck, FaithfulnessReport
from scoring.models import ModelVersion

logger = logging.getLogger(__name__)
SELECTION_DEFAULT = 20


def _default_scorer(version: ModelVersion):
    from scoring.classifier.loading import get_scorer

    return get_scorer(version)


def _rows(corpus_path: str | Path | None) -> tuple[Path, list[dict]]:
    path = Path(corpus_path or settings.CORPUS_PATH)
    try:
        return path, read_rows(path)
    except CorpusUnavailable as exc:
        raise ReportError(str(exc)) from exc


def faithfulness_report_create(
    *,
    version: ModelVersion,
    sample: int,
    selection: int = SELECTION_DEFAULT,
    seed: int = 0,
    corpus_path: str | Path | None = None,
    progress: bool = False,
    scorer_factory=_default_scorer,
) -> FaithfulnessReport:
    """Compare the explanation methods on up to `sample` test-split corpus messages that
    `version` flags (seeded order), the best attention head chosen on up to `selection` flagged
    val-split messages, and store the figures (explanations.evaluation.compare_methods).

    Promises: bad arguments, a missing corpus or a model that flags nothing raise ReportError
    before anything is stored; the report records its parameters (sample asked and obtained,
    seed, n_steps, k rule, pass rule, threshold, corpus)."""
    if sample < 1:
        raise ReportError("--sample must be at least 1")
    if selection < 1:
        raise ReportError("the best-head selection slice needs at least 1 message")
    path, rows = _rows(corpus_path)
    test = [r for r in rows if r.get("split") == "test"]
    val = [r for r in rows if r.get("split") == "val"]
    if not test or not val:
        raise ReportError(f"the corpus {path} needs test and val rows")
    scorer = scorer_factory(version)
    rng = np.random.default_rng(seed)
    picked = flagged_rows(scorer, test, threshold=version.threshold, limit=sample, rng=rng, progress=progress)
    if not picked:
        raise ReportError(f"{version.name} flags none of the {len(test)} test-split messages")
    chosen = flagged_rows(
        scorer, val, threshold=version.threshold, limit=selection, rng=rng, progress=progress
    )
    results = compare_methods(
        scorer,
        picked,
        threshold=version.threshold,
        selection_rows=chosen,
        n_steps=settings.IG_N_STEPS,
        seed=seed,
        progress=progress,
    )
    parameters = {
        "sample_requested": sample,
        "selection_size": len(chosen),
        "selection_source": "flagged val-split messages (disjoint from the test-split sample)",
        "sample_source": "flagged test-split messages, seeded random order",
        "seed": seed,
        "n_steps": settings.IG_N_STEPS,
        "threshold": version.threshold,
        "k_rule": f"{K_PERCENT} % of the words, at least {K_MIN}, at most {K_MAX}",
        "random_draws": RANDOM_DRAWS,
        "pass_rule": PASS_RULE,
        "corpus": str(path),
        "true_claims_in_sample": sum(1 for r in picked if r.get("label") == 1),
    }
    with transaction.atomic():
        return FaithfulnessReport.objects.create(
            model_version=version, sample_size=len(picked), parameters=parameters, results=results
        )


def _canary_rows(corpus_path: str | Path | None) -> tuple[list[dict], str]:
    path, rows = _rows(corpus_path)
    try:
        ids, source = canary_ids(path, rows)
    except CorpusUnavailable as exc:
        raise ReportError(str(exc)) from exc
    by_id = {r["id"]: r for r in rows}
    return [by_id[i] for i in ids], source


def _previous_details(previous: ModelVersion, ids: list[str], rows, scorer_factory, progress: bool):
    """The previous version's canary results: its latest stored check of the same canaries with
    the same n_steps, or computed now. Returns (details, where they came from)."""
    stored = (
        CanaryCheck.objects.filter(model_version=previous, error="")
        .exclude(details=[])
        .order_by("-created_at", "-id")
        .first()
    )
    if (
        stored
        and [d["id"] for d in stored.details] == ids
        and stored.parameters.get("n_steps") == settings.IG_N_STEPS
        and stored.parameters.get("threshold") == previous.threshold
    ):
        return stored.details, f"canary check {stored.pk} of {previous.name}"
    details = canary_details(
        scorer_factory(previous),
        rows,
        threshold=previous.threshold,
        n_steps=settings.IG_N_STEPS,
        progress=progress,
    )
    return details, f"computed now with {previous.name}"


def canary_check_run(
    *,
    version: ModelVersion,
    previous: ModelVersion | None,
    corpus_path: str | Path | None = None,
    progress: bool = False,
    scorer_factory=_default_scorer,
) -> CanaryCheck:
    """Check the fixed canary set with `version` and compare it with `previous`.

    Promises: a CanaryCheck is always recorded: with the pass rate per method, the rank
    correlation of attributions with the previous version, and the findings (canaries that
    passed before and fail now); or, when the check cannot run (no corpus, no canary list, the
    model cannot be loaded), with the reason in `error`. Explanation drift is never hidden."""
    parameters: dict = {"n_steps": settings.IG_N_STEPS, "threshold": version.threshold}
    try:
        rows, source = _canary_rows(corpus_path)
        parameters["canary_source"] = source
        parameters["canaries"] = len(rows)
        details = canary_details(
            scorer_factory(version),
            rows,
            threshold=version.threshold,
            n_steps=settings.IG_N_STEPS,
            progress=progress,
        )
        previous_details = None
        if previous is not None:
            previous_details, parameters["previous_source"] = _previous_details(
                previous, [r["id"] for r in rows], rows, scorer_factory, progress
            )
        comparison = compare_canaries(details, previous_details)
    except Exception as exc:  # recorded, not raised: activation has happened either way
        logger.exception("canary check of %s could not run", version.name)
        with transaction.atomic():
            return CanaryCheck.objects.create(
                model_version=version,
                previous_version=previous,
                parameters=parameters,
                error=f"{type(exc).__name__}: {exc}" if not isinstance(exc, ReportError) else str(exc),
            )
    parameters["flag_rate"] = comparison["flag_rate"]
    parameters["rank_correlations"] = comparison["rank_correlations"]
    with transaction.atomic():
        return CanaryCheck.objects.create(
            model_version=version,
            previous_version=previous,
            pass_rates=comparison["pass_rates"],
            rank_correlation=comparison["rank_correlation"],
            details=details,
            findings=comparison["findings"],
            parameters=parameters,
        )


def canary_check_after_activation(*, version_id: int, previous_id: int | None) -> CanaryCheck | None:
    """The activation hook (scoring.services.model_versions): run the canary check unless
    settings.CANARY_ON_ACTIVATION is off. Never raises: the activation has already happened."""
    if not settings.CANARY_ON_ACTIVATION:
        return None
    try:
        version = ModelVersion.objects.get(pk=version_id)
        previous = ModelVersion.objects.filter(pk=previous_id).first() if previous_id else None
        return canary_check_run(version=version, previous=previous)
    except Exception:
        logger.exception("the canary check after activating model version %s failed", version_id)
        return None
