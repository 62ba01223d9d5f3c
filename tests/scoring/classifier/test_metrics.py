import pytest

from scoring.classifier.metrics import binary_counts, quality_bar, summarize


def row(label, claim_type, score, predicted, *slices):
    return {
        "label": label,
        "claim_type": claim_type,
        "score": score,
        "predicted_type": predicted,
        "slices": list(slices),
    }


ROWS = [
    row(1, "guaranteed_returns", 0.9, "guaranteed_returns"),
    row(1, "guaranteed_returns", 0.3, "risk_free"),  # missed
    row(1, "risk_free", 0.8, "guaranteed_returns", "padded"),  # found, wrong type
    row(1, "performance_forecast", 0.95, "performance_forecast"),
    row(1, "regulatory_endorsement", 0.99, "regulatory_endorsement", "padded"),
    row(0, "no_claim", 0.7, "risk_free", "hard_negative"),  # false positive
    row(0, "no_claim", 0.1, "risk_free", "hard_negative"),
    row(0, "no_claim", 0.2, "guaranteed_returns"),
]


def test_binary_counts_at_a_threshold():
    counts = binary_counts(ROWS, 0.5)

    assert (counts["tp"], counts["fn"], counts["fp"], counts["tn"]) == (4, 1, 1, 2)
    assert counts["precision"] == pytest.approx(0.8)
    assert counts["recall"] == pytest.approx(0.8)
    assert counts["false_positive_rate"] == pytest.approx(1 / 3)


def test_undefined_rates_are_none_not_zero():
    counts = binary_counts([row(0, "no_claim", 0.1, "risk_free")], 0.5)

    assert counts["precision"] is None and counts["recall"] is None


def test_summary_per_claim_type_and_per_slice():
    summary = summarize(ROWS, 0.5)

    gr = summary["per_claim_type"]["guaranteed_returns"]
    assert (gr["claims"], gr["recall"], gr["flagged"], gr["type_accuracy"]) == (2, 0.5, 1, 1.0)
    assert summary["per_claim_type"]["risk_free"]["type_accuracy"] == 0.0
    assert summary["per_slice"]["hard_negative"]["false_positive_rate"] == pytest.approx(0.5)
    assert summary["per_slice"]["padded"]["recall"] == 1.0
    assert summary["unpadded_claims_recall"] == pytest.approx(2 / 3)


def test_the_quality_bar_names_each_check_and_whether_it_is_met():
    checks = {c["check"]: c for c in quality_bar(summarize(ROWS, 0.5))}

    assert not checks["overall recall"]["passed"]
    assert checks["recall performance_forecast"]["passed"]
    assert not checks["recall guaranteed_returns"]["passed"]
    hard = checks["hard-negative false-positive rate (corpus)"]
    assert hard["value"] == pytest.approx(0.5) and hard["passed"] is None  # reported, not a bar
    assert checks["padded recall gap vs unpadded claims"]["value"] == pytest.approx(1 / 3)


def test_a_clean_split_meets_the_quality_bar():
    rows = [
        row(1, code, 0.9, code, *s)
        for code in ("guaranteed_returns", "risk_free", "performance_forecast", "regulatory_endorsement")
        for s in ((), ("padded",))
    ]
    rows += [row(0, "no_claim", 0.1, "risk_free", "hard_negative")] * 5

    assert all(c["passed"] for c in quality_bar(summarize(rows, 0.5)) if c["passed"] is not None)
