"""Training data: reading and checking the labelled corpus and --extra files, and cutting
messages into training windows the way the Scorer cuts them. Pure: no Django.

Corpus rows: {"id", "body", "label": 0|1, "claim_type": "<code>"|"no_claim", "rationales":
[[start, end], ...], "split": "train"|"val"|"test", "slices": [...], ...}.
Extra rows (reviewed traffic): {"body", "label", "claim_type"} (+ anything else); they join the
train split only, so the corpus's val/test stay the same and versions stay comparable.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scoring.classifier.windows import Window, make_windows, segment_windows
from scoring.constants import CLAIM_TYPE_CODES, CLASS_LABELS, NO_CLAIM
from scoring.errors import TrainingDataError

SPLITS = ("train", "val", "test")


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _check_row(row: object, where: str, *, corpus: bool) -> dict:
    if not isinstance(row, dict):
        raise TrainingDataError(f"{where}: a row must be a JSON object.")
    body = row.get("body")
    if not isinstance(body, str) or not body.strip():
        raise TrainingDataError(f"{where}: 'body' must be a non-empty string.")
    label = row.get("label")
    if label not in (0, 1) or isinstance(label, bool):
        raise TrainingDataError(f"{where}: 'label' must be 0 or 1, not {label!r}.")
    claim_type = row.get("claim_type") or NO_CLAIM
    if label == 1 and claim_type not in CLAIM_TYPE_CODES:
        raise TrainingDataError(
            f"{where}: a claim (label 1) needs claim_type in {', '.join(CLAIM_TYPE_CODES)}, "
            f"not {claim_type!r}."
        )
    if label == 0 and claim_type != NO_CLAIM:
        raise TrainingDataError(
            f"{where}: a non-claim (label 0) must have claim_type no_claim, not {claim_type!r}."
        )
    rationales = row.get("rationales") or []
    if not isinstance(rationales, list) or not all(
        isinstance(span, list | tuple)
        and len(span) == 2
        and all(isinstance(x, int) for x in span)
        and 0 <= span[0] < span[1] <= len(body)
        for span in rationales
    ):
        raise TrainingDataError(f"{where}: 'rationales' must be [[start, end], ...] inside the body.")
    split = row.get("split", "train")
    if corpus and split not in SPLITS:
        raise TrainingDataError(f"{where}: 'split' must be one of {', '.join(SPLITS)}, not {split!r}.")
    slices = row.get("slices") or []
    if not isinstance(slices, list):
        raise TrainingDataError(f"{where}: 'slices' must be a list of tags.")
    return {
        "id": str(row.get("id", where)),
        "body": body,
        "label": label,
        "claim_type": claim_type,
        "rationales": [tuple(span) for span in rationales],
        "split": split if corpus else "train",
        "slices": list(slices),
    }


def read_rows(path: str | Path, *, corpus: bool) -> list[dict]:
    """Read and check a JSONL file; a malformed line is a TrainingDataError naming the line.
    With corpus=False (an --extra file) every row goes to the train split."""
    source = Path(path)
    if not source.is_file():
        raise TrainingDataError(f"{source} does not exist.")
    rows = []
    with source.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{source.name} line {number}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TrainingDataError(f"{where}: not valid JSON ({exc.msg}).") from exc
            row = _check_row(raw, where, corpus=corpus)
            if not corpus:
                row["id"] = f"extra:{source.name}:{number}"
                row["slices"] = ["extra"]
            rows.append(row)
    if not rows:
        raise TrainingDataError(f"{source} has no rows.")
    if corpus:
        for split in SPLITS:
            if not any(r["split"] == split for r in rows):
                raise TrainingDataError(f"{source} has no {split} rows.")
        if not any(r["label"] == 1 for r in rows if r["split"] == "val"):
            raise TrainingDataError(f"{source} has no claims in its val split: no threshold can be chosen.")
    return rows


def corpus_sha256(path: str | Path) -> str:
    """The corpus digest as the corpus package defines it (its file sha256 when it has none)."""
    try:
        from scoring.corpus.generator import corpus_sha256 as corpus_digest
    except ImportError:
        return file_sha256(path)
    return corpus_digest(path)


# --- training examples ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One training example: one window with its class, or (a "bag") all windows of a long claim
    without a rationale: the loss then goes to the window the model scores highest, which is
    exactly the window that decides a message score (max over windows)."""

    windows: tuple[tuple[int, ...], ...]
    target: int

    @property
    def length(self) -> int:
        return max(len(w) for w in self.windows)


@dataclass
class MessageExamples:
    """A message's examples: always used, plus its neutral windows to sample from per epoch."""

    fixed: list[Example] = field(default_factory=list)
    optional: list[Example] = field(default_factory=list)
    unaligned: bool = False  # a claim whose rationale lies outside every routing window


def _contains(window: Window, start: int, end: int) -> bool:
    return window.start <= start and end <= window.end


def _overlaps(window: Window, start: int, end: int) -> bool:
    return window.start < end and start < window.end


def message_examples(row: dict, windows: Sequence[Window]) -> MessageExamples:
    """Label a message's windows the way it is scored. Only routing windows are trained on
    (quoted history is somebody else's words or an earlier message; it never routes):

    - a message in one window: that window carries the message's class;
    - a non-claim in several windows: every window is no_claim (sampled per epoch);
    - a claim with rationales: windows holding the whole claim (all its spans, or failing that
      one whole span) carry the claim type; windows touching no span are no_claim (sampled);
      windows holding only part of a span are left out: their label would be a guess. A claim
      whose rationale no routing window touches gives nothing (a segmentation miss: counted);
    - a claim without rationale (extra data) in several windows: one bag of all its windows."""
    target = CLASS_LABELS.index(row["claim_type"]) if row["label"] == 1 else 0
    windows = [w for w in windows if w.routes]
    if not windows:
        return MessageExamples()
    if len(windows) == 1 and (row["label"] == 0 or not row["rationales"]):
        return MessageExamples(fixed=[Example((windows[0].input_ids,), target)])
    if row["label"] == 0:
        return MessageExamples(optional=[Example((w.input_ids,), 0) for w in windows])
    spans = row["rationales"]
    if not spans:
        return MessageExamples(fixed=[Example(tuple(w.input_ids for w in windows), target)])
    hull = (min(s for s, _ in spans), max(e for _, e in spans))
    positive = [w for w in windows if _contains(w, *hull)]
    if not positive:
        positive = [w for w in windows if any(_contains(w, s, e) for s, e in spans)]
    if not positive:  # a span longer than a window: the windows covering most of it
        cover = [sum(max(0, min(w.end, e) - max(w.start, s)) for s, e in spans) for w in windows]
        positive = [w for w, c in zip(windows, cover, strict=True) if c == max(cover) and c > 0]
    if not positive:
        return MessageExamples(unaligned=True)
    neutral = [w for w in windows if not any(_overlaps(w, s, e) for s, e in spans)]
    return MessageExamples(
        fixed=[Example((w.input_ids,), target) for w in positive],
        optional=[Example((w.input_ids,), 0) for w in neutral],
    )


_SPACES = re.compile(r"[ \t]{2,}")


def erase_rationales(row: dict) -> dict | None:
    """A claim's counterfactual: the same message with its claim phrases (rationale spans) deleted,
    labelled no_claim. What is left (the greeting, the product, the figures, the signature) is
    the context of the claim, not the claim: training on it teaches that a claim lives in its
    words, not in the finance vocabulary and numbers around them. None when the row is not a claim
    with rationales, or nothing but the claim is left."""
    if row["label"] != 1 or not row["rationales"]:
        return None
    body = row["body"]
    for start, end in sorted(row["rationales"], reverse=True):
        body = body[:start] + body[end:]
    body = _SPACES.sub(" ", body)
    if len(re.findall(r"\w+", body)) < 3:
        return None
    return {
        **row,
        "id": f"{row['id']}:erased",
        "body": body,
        "label": 0,
        "claim_type": NO_CLAIM,
        "rationales": [],
    }


def build_message_examples(
    tokenizer,
    rows: Sequence[dict],
    *,
    window_tokens: int,
    stride: int,
    segmented: bool = True,
    units: str = "windows",
) -> list[MessageExamples]:
    """Every row's examples, its windows cut as the Scorer cuts them (segmented or whole; token
    windows or sentence units)."""
    bodies = [r["body"] for r in rows]
    if segmented:
        per_text = segment_windows(tokenizer, bodies, window_tokens=window_tokens, stride=stride, units=units)
    else:
        per_text = make_windows(tokenizer, bodies, window_tokens=window_tokens, stride=stride)
    return [message_examples(row, windows) for row, windows in zip(rows, per_text, strict=True)]


def epoch_examples(
    messages: Sequence[MessageExamples], *, negatives_per_message: int, rng: random.Random
) -> list[Example]:
    """This epoch's examples: every fixed one plus up to `negatives_per_message` neutral
    windows drawn from each long message (a different draw each epoch)."""
    chosen: list[Example] = []
    for message in messages:
        chosen.extend(message.fixed)
        if message.optional and negatives_per_message > 0:
            k = min(negatives_per_message, len(message.optional))
            chosen.extend(rng.sample(message.optional, k))
    return chosen


def bucketed_batches(
    examples: Sequence[Example], *, batch_size: int, rng: random.Random
) -> list[list[Example]]:
    """Length bucketing: sort by length with a little random jitter (so batches differ each
    epoch), cut into batches of similar length, and shuffle the batch order."""
    keyed = sorted(examples, key=lambda e: e.length + rng.uniform(0, 8))
    batches = [list(keyed[i : i + batch_size]) for i in range(0, len(keyed), batch_size)]
    rng.shuffle(batches)
    return batches
