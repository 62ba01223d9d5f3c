"""Writes of the offline judgements: the faithfulness report of a model version and the canary
check recorded at each activation (explanations.evaluation does the computing)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import DatabaseError, transaction

from core.publish import publish
from explanations.attribution import resolve_precision
from explanations.corpus import CorpusUnavailable, canary_ids, read_rows
from explanations.errors import ReportError
from explanations.evaluation import canary_details, compare_canaries, compare_methods, flagged_rows
from explanations.faithfulness import K_MAX, K_MIN, K_PERCENT, PASS_RULE, RANDOM_DRAWS
from explanations.models import CanaryCheck, FaithfulnessReport
from explanations.services.explain import ig_budget, ig_options
from scoring.classifier import scorer_for
from scoring.errors import ScoringError
from scoring.models import ModelActivation, ModelVersion

logger = logging.getLogger(__name__)
SELECTION_DEFAULT = 20
SOURCES = {
    "test": "flagged test-split messages, seeded random order",
    "canary": "flagged messages of the fixed canary set (test-split claims), seeded random order",
}


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
    scorer_factory=scorer_for,
    source: str = "test",
    random_rankings: int = 1,
) -> FaithfulnessReport:
    """Compare the explanation methods on up to `sample` test-split corpus messages that
    `version` flags (seeded order), or with source="canary" on the flagged messages of the fixed
    canary set, the best attention head chosen on up to `selection` flagged val-split messages,
    and store the figures (explanations.evaluation.compare_methods; `random_rankings` > 1 draws the
    random control that many times, for its mean and spread).

    Promises: bad arguments, a missing corpus or a model that flags nothing raise ReportError
    before anything is stored; the report records its parameters (sample asked and obtained,
    seed, n_steps, k rule, pass rule, threshold, corpus)."""
    if sample < 1:
        raise ReportError("--sample must be at least 1")
    if selection < 1:
        raise ReportError("the best-head selection slice needs at least 1 message")
    if random_rankings < 1:
        raise ReportError("--random-rankings must be at least 1")
    if source not in SOURCES:
        raise ReportError(f"the report's messages come from {' or '.join(SOURCES)}, not {source!r}")
    path, rows = _rows(corpus_path)
    test = [r for r in rows if r.get("split") == "test"]
    val = [r for r in rows if r.get("split") == "val"]
    if not test or not val:
        raise ReportError(f"the corpus {path} needs test and val rows")
    if source == "canary":
        test, _ = _canary_rows(corpus_path)
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
        **ig_options(),
        ig_budget=ig_budget(),
        seed=seed,
        progress=progress,
        random_rankings=random_rankings,
    )
    parameters = {
        "sample_requested": sample,
        "selection_size": len(chosen),
        "selection_source": "flagged val-split messages (disjoint from the test-split sample)",
        "sample_source": SOURCES[source],
        "seed": seed,
        **ig_options(),
        "precision": resolve_precision(settings.IG_PRECISION, scorer.device),
        "threshold": version.threshold,
        "k_rule": f"{K_PERCENT} % of the words, at least {K_MIN}, at most {K_MAX}",
        "random_draws": RANDOM_DRAWS,
        "random_rankings": random_rankings,
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


def _canary_details_of(version: ModelVersion, ids: list[str], rows, scorer_factory, progress: bool):
    """A version's canary results: its latest stored check of the same canaries with the same IG
    options (ig_options), threshold and pass rule (checks judged by an earlier rule are not compared
    with this one's), or computed now. Returns (details, where they came from)."""
    stored = (
        CanaryCheck.objects.filter(model_version=version, error="")
        .exclude(details=[])
        .order_by("-created_at", "-id")
        .first()
    )
    if (
        stored
        and [d["id"] for d in stored.details] == ids
        and all(stored.parameters.get(key) == value for key, value in ig_options().items())
        and stored.parameters.get("threshold") == version.threshold
        and stored.parameters.get("pass_rule") == PASS_RULE
    ):
        return stored.details, f"canary check {stored.pk} of {version.name}"
    details = canary_details(
        scorer_factory(version),
        rows,
        threshold=version.threshold,
        **ig_options(),
        ig_budget=ig_budget(),
        progress=progress,
    )
    return details, f"computed now with {version.name}"


def canary_check_run(
    *,
    version: ModelVersion,
    previous: ModelVersion | None,
    activation: ModelActivation | None = None,
    corpus_path: str | Path | None = None,
    progress: bool = False,
    scorer_factory=scorer_for,
) -> CanaryCheck:
    """Check the fixed canary set with `version` and compare it with `previous`.

    Promises: a CanaryCheck is always recorded: with the pass rate per method, the rank
    correlation of attributions with the previous version, and the findings (canaries that
    passed before and fail now); or, when the check cannot run (no corpus, no canary list, the
    model cannot be loaded), with the reason in `error`. Explanation drift is never hidden.
    For an activation that already has its check, that check is returned (nothing is redone)."""
    if activation is not None:
        done = CanaryCheck.objects.filter(activation=activation).first()
        if done is not None:
            return done
    parameters: dict = {**ig_options(), "threshold": version.threshold, "pass_rule": PASS_RULE}
    record = {"model_version": version, "previous_version": previous, "activation": activation}
    try:
        rows, source = _canary_rows(corpus_path)
        parameters["canary_source"] = source
        parameters["canaries"] = len(rows)
        details = canary_details(
            scorer_factory(version),
            rows,
            threshold=version.threshold,
            **ig_options(),
            ig_budget=ig_budget(),
            progress=progress,
        )
        previous_details = None
        if previous is not None:
            previous_details, parameters["previous_source"] = _canary_details_of(
                previous, [r["id"] for r in rows], rows, scorer_factory, progress
            )
        comparison = compare_canaries(details, previous_details)
    except DatabaseError:
        raise
    except Exception as exc:  # recorded, not raised: the activation stands either way
        logger.exception("canary check of %s could not run", version.name)
        reason = str(exc) if isinstance(exc, ReportError) else f"{type(exc).__name__}: {exc}"
        return _record(record, parameters=parameters, error=reason)
    parameters["flag_rate"] = comparison["flag_rate"]
    parameters["rank_correlations"] = comparison["rank_correlations"]
    return _record(
        record,
        parameters=parameters,
        pass_rates=comparison["pass_rates"],
        rank_correlation=comparison["rank_correlation"],
        details=details,
        findings=comparison["findings"],
    )


def _record(record: dict, **fields) -> CanaryCheck:
    with transaction.atomic():
        if record["activation"] is not None:
            check, _ = CanaryCheck.objects.get_or_create(
                activation=record["activation"], defaults={**record, **fields}
            )
            return check
        return CanaryCheck.objects.create(**record, **fields)


def canary_check_for_activation(*, activation_id: int, progress: bool = False) -> CanaryCheck:
    """The canary check of one activation (what the queued task runs): the activated version
    against the version it replaced, then the version's faithfulness report when it has none
    yet (faithfulness_report_for_activation). Idempotent: an activation is checked once."""
    activation = ModelActivation.objects.select_related("model_version", "previous").get(pk=activation_id)
    check = canary_check_run(
        version=activation.model_version,
        previous=activation.previous,
        activation=activation,
        progress=progress,
    )
    faithfulness_report_for_activation(version=activation.model_version, progress=progress)
    return check


def faithfulness_report_for_activation(*, version: ModelVersion, progress: bool = False):
    """The faithfulness report an activated version gets on the checks queue, so that the
    faithfulness page has one without anybody running a command: FAITHFULNESS_REPORT_SAMPLE
    flagged test messages (0 turns it off). Idempotent: a version that already has a report with
    the current IG settings and pass rule keeps it. A report that cannot be made is logged, not raised: the
    activation and its canary check stand either way. Returns the report or None."""
    sample = settings.FAITHFULNESS_REPORT_SAMPLE
    if sample <= 0:
        return None
    # The IG settings that shape a report (its precision is recorded resolved, "auto" is not), and
    # the rule that judged it: a report of an earlier rule is made again.
    wanted = {key: value for key, value in ig_options().items() if key != "precision"}
    wanted["pass_rule"] = PASS_RULE
    for report in FaithfulnessReport.objects.filter(model_version=version).only("parameters"):
        if all(report.parameters.get(key) == value for key, value in wanted.items()):
            return report
    try:
        return faithfulness_report_create(version=version, sample=sample, progress=progress)
    except DatabaseError:
        raise
    except Exception:
        logger.exception("the faithfulness report of %s could not be made", version.name)
        return None


def canary_check_enqueue(*, activation_id: int) -> bool:
    """Queue the canary check of an activation on the checks queue, unless CANARY_ON_ACTIVATION
    is off. The check takes minutes on a CPU, so neither the activation nor scoring (queue
    `gpu`) waits for it. When the broker is down, a CanaryCheck records that it could not be
    queued and how to run it by hand. Returns whether a task was published."""
    if not settings.CANARY_ON_ACTIVATION:
        return False
    from explanations.tasks import canary_check

    if publish(
        canary_check,
        args=[activation_id],
        queue=settings.CHECKS_QUEUE,
        what=f"the canary check of activation {activation_id} could not be queued",
    ):
        return True
    activation = ModelActivation.objects.select_related("model_version", "previous").get(pk=activation_id)
    _record(
        {
            "model_version": activation.model_version,
            "previous_version": activation.previous,
            "activation": activation,
        },
        parameters={"threshold": activation.model_version.threshold},
        error=(
            "the canary check could not be queued (the broker is unavailable); run "
            f"`python manage.py canary_check --model {activation.model_version.name}`"
        ),
    )
    return False


def canary_comparison(
    *,
    baseline: ModelVersion,
    candidate: ModelVersion,
    corpus_path: str | Path | None = None,
    progress: bool = False,
    scorer_factory=scorer_for,
) -> dict:
    """The fixed canary set checked with both versions (a stored check with the same IG options
    is reused, otherwise it is computed now): each version's pass rate per method, and the rank
    correlation of the candidate's attributions with the baseline's, with the canaries that
    pass with the baseline and fail with the candidate. JSON-ready; when the check cannot run
    (no corpus, no canary list, a model that cannot load) the reason is returned in `error`."""
    try:
        rows, source = _canary_rows(corpus_path)
        ids = [r["id"] for r in rows]
        before, before_source = _canary_details_of(baseline, ids, rows, scorer_factory, progress)
        after, after_source = _canary_details_of(candidate, ids, rows, scorer_factory, progress)
    except (ReportError, ScoringError) as exc:
        return {"error": str(exc)}
    compared = compare_canaries(after, before)
    return {
        "canaries": len(rows),
        "canary_source": source,
        "pass_rates": {
            baseline.name: compare_canaries(before, None)["pass_rates"],
            candidate.name: compared["pass_rates"],
        },
        "sources": {baseline.name: before_source, candidate.name: after_source},
        "rank_correlation": compared["rank_correlation"],
        "rank_correlations": compared["rank_correlations"],
        "findings": compared["findings"],
    }
