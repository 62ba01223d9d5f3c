"""Model artifacts on disk: MODELS_DIR/<version>/ with

- model.safetensors, config.json, tokenizer files (loadable by transformers from the folder);
- claimwatch.json: labels, threshold and its rule, window settings, hyper-parameters, base model,
  corpus sha256, extra training data;
- metrics.json: val/test metrics at the threshold (test with and without novel_phrasing);
- eval_scores.jsonl: every val/test row's score, so metrics at another threshold are recomputed
  without re-scoring;
- MODEL_CARD.md: scope and limits, generated from the metrics.

The artifact sha256 is a digest over every file (relative path + the file's sha256), so any
changed, missing or added file changes it. Pure: no Django.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from scoring.errors import ArtifactError

MANIFEST_NAME = "claimwatch.json"
METRICS_NAME = "metrics.json"
EVAL_SCORES_NAME = "eval_scores.jsonl"
MODEL_CARD_NAME = "MODEL_CARD.md"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", MANIFEST_NAME)
_CHUNK = 1 << 20


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def artifact_sha256(artifact_dir: str | Path) -> str:
    """Digest over all files of the artifact: sha256 of "relative/path\\0<file sha256>\\n" lines
    in path order. Raises ArtifactError when the folder or a required file is missing."""
    root = Path(artifact_dir)
    if not root.is_dir():
        raise ArtifactError(f"The model artifact folder {root} does not exist.")
    missing = [name for name in REQUIRED_FILES if not (root / name).is_file()]
    if missing:
        raise ArtifactError(f"The model artifact at {root} is incomplete: missing {', '.join(missing)}.")
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(root).as_posix()}\0{_file_sha256(path)}\n".encode())
    return digest.hexdigest()


def verify_artifact(artifact_dir: str | Path, expected_sha256: str) -> None:
    """Raise ArtifactError unless the artifact exists and its digest is `expected_sha256`."""
    actual = artifact_sha256(artifact_dir)
    if actual != expected_sha256:
        raise ArtifactError(
            f"The model artifact at {artifact_dir} has changed or is corrupt: its sha256 is "
            f"{actual[:12]}..., the version recorded {expected_sha256[:12]}...."
        )


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path} is missing.") from exc
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path} is not valid JSON: {exc}") from exc


def read_manifest(artifact_dir: str | Path) -> dict:
    return _read_json(Path(artifact_dir) / MANIFEST_NAME)


def read_metrics(artifact_dir: str | Path) -> dict:
    path = Path(artifact_dir) / METRICS_NAME
    return _read_json(path) if path.is_file() else {}


def read_eval_rows(artifact_dir: str | Path) -> list[dict]:
    """The stored val/test scores, or [] when the artifact has none."""
    path = Path(artifact_dir) / EVAL_SCORES_NAME
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _make_group_readable(paths: Iterable[Path]) -> None:
    """g+r on every file and g+rx on every folder of `paths`, whatever the umask: save_pretrained
    writes model.safetensors owner-only, and a worker running as another user of the app's group
    must still read the artifact."""
    for path in paths:
        if path.is_symlink():
            continue
        extra = stat.S_IRGRP | stat.S_IXGRP if path.is_dir() else stat.S_IRGRP
        path.chmod(stat.S_IMODE(path.stat().st_mode) | extra)


def save_artifact(
    out_dir: str | Path,
    *,
    model,
    tokenizer,
    manifest: dict,
    metrics: dict,
    eval_rows: list[dict],
) -> str:
    """Write the artifact into `out_dir` (which must not exist yet) and return its sha256.
    Files are written to a temporary sibling folder first and renamed at the end, so a crash
    never leaves a half-written artifact under the final name. Every file is group-readable and
    every folder (the models folder too, when this creates it) group-searchable."""
    target = Path(out_dir)
    if target.exists():
        raise ArtifactError(f"{target} already exists: a version's artifact is never overwritten.")
    staging = target.with_name(f".{target.name}.partial")
    if staging.exists():
        shutil.rmtree(staging)
    created_parents = [parent for parent in staging.parents if not parent.exists()]
    staging.mkdir(parents=True)
    _make_group_readable(created_parents)
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        (staging / METRICS_NAME).write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
        (staging / EVAL_SCORES_NAME).write_text("".join(json.dumps(row) + "\n" for row in eval_rows))
        (staging / MODEL_CARD_NAME).write_text(model_card(manifest, metrics))
        _make_group_readable([staging, *staging.rglob("*")])
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return artifact_sha256(target)


# --- the model card -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _summary_table(title: str, summary: dict | None) -> list[str]:
    if not summary:
        return []
    overall = summary["overall"]
    lines = [
        f"### {title}",
        "",
        f"{overall['n']} messages ({overall['positives']} claims, {overall['negatives']} non-claims): "
        f"precision {_pct(overall['precision'])}, recall {_pct(overall['recall'])}, "
        f"false-positive rate {_pct(overall['false_positive_rate'])}.",
        "",
        "| claim type | claims | recall | right type among flagged |",
        "| --- | ---: | ---: | ---: |",
    ]
    for code, stats in summary["per_claim_type"].items():
        lines.append(
            f"| {code} | {stats['claims']} | {_pct(stats['recall'])} | {_pct(stats['type_accuracy'])} |"
        )
    lines += ["", "| slice | messages | claim recall | false-positive rate |", "| --- | ---: | ---: | ---: |"]
    for tag, stats in summary["per_slice"].items():
        lines.append(
            f"| {tag} | {stats['n']} | {_pct(stats['recall'])} | {_pct(stats['false_positive_rate'])} |"
        )
    lines.append("")
    return lines


def _frozen(hp: dict) -> str:
    frozen = hp.get("freeze_layers") or 0
    return f"embeddings and the lowest {frozen} encoder layers frozen" if frozen else "all layers trained"


def _handwritten_table(evaluation: dict) -> list[str]:
    if not evaluation:
        return []
    lines = [
        "## Measured on hand-written sets (never trained on; routed = model flag or rule hit)",
        "",
        "| set | messages | routed recall | routed precision | routed false-positive rate "
        "| model-only false-positive rate | ECE |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, report in evaluation.items():
        routed = report["decisions"]["routed"]["overall"]
        flagged = report["decisions"]["flagged"]["overall"]
        ece = report["calibration"]["ece"]
        lines.append(
            f"| {name} | {routed['n']} | {_pct(routed['recall'])} | {_pct(routed['precision'])} | "
            f"{_pct(routed['false_positive_rate'])} | {_pct(flagged['false_positive_rate'])} | "
            f"{'n/a' if ece is None else f'{ece:.3f}'} |"
        )
    lines.append("")
    return lines


def _verdict(passed: bool | None) -> str:
    return "reported" if passed is None else "yes" if passed else "NO"


def model_card(manifest: dict, metrics: dict) -> str:
    """MODEL_CARD.md: what the model is for, how it was trained, what it measured, its limits."""
    hp = manifest.get("hyperparameters", {})
    extra = manifest.get("extra_data") or []
    bar = metrics.get("quality_bar") or []
    lines = [
        f"# Model card: {manifest.get('version', 'unnamed')}",
        "",
        "## What it is",
        "",
        f"A {len(manifest.get('labels', []))}-way classifier ({', '.join(manifest.get('labels', []))}) "
        f"fine-tuned from `{manifest.get('base_model', '?')}` "
        f"({_frozen(hp)}, {hp.get('pooling', 'cls')} pooling) to flag regulated financial claims in "
        "outgoing messages. "
        + (
            "Each message is read in its parts (the text the sender wrote, the signature block, quoted "
            "history), each part in its own "
            if manifest.get("segmentation")
            else "Each message is read whole, in "
        )
        + (
            "sentences and adjacent sentence pairs"
            if manifest.get("units") == "sentences"
            else f"token windows ({manifest.get('window_tokens')} tokens, "
            f"overlap {manifest.get('window_stride')})"
        )
        + "; the message score is the maximum of 1 - P(no_claim) over the windows of the parts that route "
        "(quoted history does not). Claim type = argmax over the claim classes. Scores are calibrated by "
        f"temperature scaling on the validation split (T = {manifest.get('temperature', 1.0):.3f}, "
        "folded into the head)"
        + (
            f"; the message score's log-odds are then lowered by {manifest['length_penalty']:.2f} x "
            "ln(its routing windows), fitted on the validation split (a long message has more windows "
            "to score high by accident)."
            if manifest.get("length_penalty")
            else "."
        ),
        "",
        f"Threshold **{manifest.get('threshold', float('nan')):.4f}**, chosen by the rule: "
        f"{manifest.get('threshold_rule', '?')}. A flag sends a message to a human reviewer: the "
        "reviewer's decision, not this model, is the decision.",
        *(
            f"- read from `{Path(t['path']).name}` sha256 `{t['sha256']}`: {t['rows']} messages, "
            f"{t['claims']} claims (hand-written, never trained on)"
            for t in manifest.get("threshold_sets") or []
        ),
        *(
            [f"- the same rule on the validation split would give {metrics['val_rule_threshold']:.4f}"]
            if manifest.get("threshold_sets") and metrics.get("val_rule_threshold") is not None
            else []
        ),
        "",
        "## Training",
        "",
        f"- corpus sha256 `{manifest.get('corpus_sha256', '?')}`"
        f" ({manifest.get('corpus_rows', '?')} rows; train/val/test splits as in the corpus)",
        f"- extra training rows (train split only): {sum(e.get('rows', 0) for e in extra)} from "
        f"{len(extra)} file(s)"
        + "".join(f"\n  - `{e['path']}` sha256 `{e['sha256']}`, {e['rows']} rows" for e in extra),
        "- erased claims: "
        + (
            "every training claim also seen with its claim phrases (rationale spans) deleted, as "
            "no_claim, so that its evidence is the claim's words"
            if hp.get("erase_rationales")
            else "none (the claims as written only)"
        ),
        "- hyper-parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(hp.items())),
    ]
    training = metrics.get("training") or {}
    if training:
        lines.append(
            f"- {training.get('epochs_run')} epoch(s), best epoch {training.get('best_epoch')}, "
            f"{training.get('seconds', 0):.0f} s on {training.get('device')}"
            + (f" (stopped early: {training['stopped_because']})" if training.get("stopped_because") else "")
        )
    lines += ["", "## Measured (test split, at the threshold)", ""]
    lines += _summary_table(
        "In-distribution test split (test without novel_phrasing)", metrics.get("test_in_distribution")
    )
    lines += _summary_table(
        "novel_phrasing slice (templates absent from training)", metrics.get("test_novel_phrasing")
    )
    lines += _summary_table("Whole test split (including novel_phrasing)", metrics.get("test"))
    if bar:
        lines += [
            "### Quality bar (in-distribution test split)",
            "",
            "| check | value | target | met |",
            "| --- | ---: | --- | --- |",
        ]
        for item in bar:
            value = "n/a" if item["value"] is None else f"{item['value']:.3f}"
            lines.append(f"| {item['check']} | {value} | {item['target']} | {_verdict(item['passed'])} |")
        lines.append("")
    lines += _handwritten_table(metrics.get("evaluation_sets") or {})
    calibration = metrics.get("calibration") or {}
    if calibration.get("val"):
        lines += [
            "## Calibration",
            "",
            f"Expected calibration error ({len(calibration['val']['bins'])} equal-width bins): val "
            f"{calibration['val']['ece']:.3f}, test {calibration['test']['ece']:.3f} "
            f"({calibration.get('method', '')}).",
            "",
        ]
    lines += [
        "## Scope and limits",
        "",
        "- Trained on a **synthetic** corpus generated from templates (see "
        "scoring/corpus/DATASHEET.md), split by template family, so the test figures are on "
        "phrasings the model never trained on; the hand-written sets are the closest thing here to "
        "real traffic. Real traffic will differ again.",
        "- English only. Four claim types only; anything else is no_claim to this model.",
        "- New euphemisms appear over time: watch the disagreement and drift charts, collect the "
        "reviewed phrasings and train a new version (`train_classifier --extra`), rather than "
        "moving the threshold.",
        "- Calibrated on the corpus's claim rate (about a third of messages): a score says how often "
        "such a message is a claim in a population like val, not the probability of a regulatory "
        "breach in real traffic, where claims are far rarer.",
        "",
    ]
    return "\n".join(lines)
