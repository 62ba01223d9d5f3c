"""The one Scorer: a trained classifier artifact loaded once, scoring texts in length-sorted,
dynamically padded batches under a token budget.

- what the model reads: each part of a message (body, signature, quoted history:
  scoring.segmentation) cut into its own token windows (windows.segment_windows), for artifacts
  whose manifest says they were trained that way ("segmentation"); older ones read whole texts;
- score = 1 - P(no_claim) of the best window; the message score is the max over its routing
  windows (body and signature; quoted history only when there is nothing else), every window's
  score is kept with its part (WindowScore, character offsets into the text);
- claim_type = argmax over the four claim classes in the best window (set whatever the score);
- CUDA when available, otherwise CPU; always under torch.inference_mode; the number format is
  `precision` (scoring.classifier.precision): "auto" is bfloat16 on hardware with bf16 matrix
  units (a bf16 GPU; a CPU with AVX512-BF16/AMX), float32 elsewhere. In bfloat16 every window
  whose decision bf16 could change is scored again in float32 (see "Decisions in bfloat16");
- windows are sorted by length and batched so that batch size x longest window <= token_budget
  and padding adds at most a quarter to the real tokens (windows.length_sorted_batches),
  identical windows are run once, and results come back in input order;
- on CUDA the host work overlaps the device's: inputs go through pinned memory without blocking,
  results come back to the host once per scoring call (per chunk with `overlap`), and
  (`overlap`, on by default on CUDA) the texts are split into chunks of about one forward budget
  whose tokenisation runs in a thread while the device runs the chunk before;
- a batch that runs out of device memory (torch.OutOfMemoryError) is halved and run again after
  the allocator's cache is emptied; only a single window that does not fit alone raises
  `DeviceOutOfMemory`, which is retryable (another worker, or later), never a verdict.

Input the Scorer refuses, with `ScoringInputError` (its `.index` says which text, `.reason` why;
nothing is returned then):
- anything that is not a `str`;
- a text longer than `max_chars` characters (settings.MAX_BODY_CHARS), so time stays bounded;
- a text that is not valid Unicode (lone surrogates);
- a text with nothing to score: empty, whitespace-only, or only control/format characters,
  combining marks on no letter or U+FFFD (it
  yields no token; scoring.text.has_content, which ingest applies too, so such a text is refused
  before it is stored). Such a text carries no claim, but scoring it would only report the
  model's bias on an empty window, so the Scorer says so instead of inventing a number.
Emoji-only text is scored (it yields [UNK] tokens) like any other text. Use `refusal_reason(text)`
to filter a batch before scoring it.

Decisions in bfloat16. bf16 keeps 8 bits of mantissa, so a window's scores move a little from
float32's: measured on the 6,915 windows of the corpus with the fine-tuned MiniLM, the claim
log-odds log(score / (1 - score)) by at most 0.13 (99th percentile 0.02), the score by at most
0.03. Decisions must not depend on it, so after the bf16 pass the windows that are close to a
decision are scored again in float32 and keep the float32 numbers:
- every window whose claim log-odds lie within RECHECK_MARGIN (0.5, about four times the largest
  deviation measured) of the log-odds of a decision threshold: the threshold in the artifact's
  manifest and every threshold registered with `watch_threshold` (get_scorer registers each
  model version's own, as versions can share an artifact with different thresholds);
- every window at or above (lowest threshold - margin) whose two most likely claim types are
  within the margin of each other (the predicted claim type of a flagged message);
- a flagged message's best routing window and every routing window of another claim type within
  the margin of it: which of two near-equal windows is best, and so the message's claim type,
  is float32's too (a long message can hold two claims of different types scoring 0.9525 and
  0.9526).
So the flag and the claim type of every message are float32's; a window far from every threshold
keeps its bf16 score (off by at most a few hundredths). With no threshold known nothing is
re-scored. `recheck_counts` tells how many windows were scored and how many re-scored.

No Django here: get_scorer() in loading.py builds Scorers from ModelVersions and settings.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer

from scoring.classifier.artifacts import MANIFEST_NAME
from scoring.classifier.calibration import length_discounted
from scoring.classifier.device_check import resolve_device
from scoring.classifier.modeling import load_classifier
from scoring.classifier.precision import AUTO, FLOAT32, autocast, resolve_precision
from scoring.classifier.windows import (
    DEFAULT_STRIDE,
    DEFAULT_WINDOW_TOKENS,
    SENTENCE_UNITS,
    WINDOW_UNITS,
    Window,
    check_window_settings,
    length_sorted_batches,
    make_windows,
    segment_windows,
)
from scoring.constants import NO_CLAIM
from scoring.errors import DeviceOutOfMemory, ModelNotReady, ScoringInputError
from scoring.segmentation import Segment, segment
from scoring.text import NOTHING_TO_SCORE, has_content

logger = logging.getLogger(__name__)

DEFAULT_TOKEN_BUDGET = 8192
# Overlapped scoring cuts the texts into chunks of about this many characters per budget token
# (about four characters a token in English mail): one chunk is about one forward budget.
CHARS_PER_BUDGET_TOKEN = 4
DEFAULT_MAX_CHARS = 100_000
# Claim log-odds around a decision threshold inside which a bf16 window is re-scored in float32.
RECHECK_MARGIN = 0.5


@dataclass(frozen=True)
class WindowScore:
    """The claim score (1 - P(no_claim)) of one window, with its character span [start, end),
    the kind of message part it lies in and whether that part routes (scoring.segmentation)."""

    start: int
    end: int
    score: float
    kind: str = "body"
    routes: bool = True


@dataclass(frozen=True)
class ScoreResult:
    """One text's result: the best window's claim score, claim type and class probabilities."""

    score: float  # 1 - P(no_claim) of the best routing window
    claim_type: str  # argmax over the four claim classes (best routing window)
    probabilities: dict[str, float]  # label -> prob, best routing window
    windows: list[WindowScore]
    best_window: int  # index into windows: the routing window that decided the score
    segments: list[Segment] = field(default_factory=list)  # the message's parts (segmented artifacts)
    # What the text was read with beyond itself (a chat line's earlier lines, quoted history
    # already seen in its thread): set by scoring.services.context, stored on the Prediction.
    context: dict = field(default_factory=dict)


def log_odds(probability: float) -> float:
    """log(p / (1 - p)), finite for p in (0, 1); +-inf at the ends."""
    if probability <= 0.0:
        return -math.inf
    if probability >= 1.0:
        return math.inf
    return math.log(probability) - math.log1p(-probability)


def claim_log_odds(probabilities: np.ndarray) -> np.ndarray:
    """log(score / P(no_claim)) per row of class probabilities, score = the claim classes' sum."""
    tiny = np.finfo(np.float32).tiny
    claim = np.maximum(probabilities[:, 1:].sum(axis=1, dtype=np.float64), tiny)
    return np.log(claim) - np.log(np.maximum(probabilities[:, 0].astype(np.float64), tiny))


def labels_of(model) -> list[str]:
    """The head's class labels in index order, from the model config."""
    id2label = model.config.id2label
    return [id2label[i] for i in range(len(id2label))]


class Scorer:
    """Loads one classifier artifact once and scores texts with it (see the module docstring)."""

    labels: list[str]
    device: torch.device
    threshold: float | None

    def __init__(
        self,
        artifact_dir: str | Path,
        *,
        device: str = "auto",
        window_tokens: int = DEFAULT_WINDOW_TOKENS,
        stride: int = DEFAULT_STRIDE,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        max_chars: int = DEFAULT_MAX_CHARS,
        precision: str = AUTO,
        overlap: bool | None = None,
    ) -> None:
        path = Path(artifact_dir)
        if not (path / "config.json").is_file():
            raise ModelNotReady(f"No classifier artifact at {path} (config.json is missing).")
        manifest: dict = {}
        if (path / MANIFEST_NAME).is_file():
            manifest = json.loads((path / MANIFEST_NAME).read_text())
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = load_classifier(path)
        except (OSError, ValueError) as exc:
            raise ModelNotReady(f"The classifier artifact at {path} cannot be loaded: {exc}") from exc
        self._setup(
            model,
            tokenizer,
            labels=manifest.get("labels") or labels_of(model),
            threshold=manifest.get("threshold"),
            # Artifacts trained before message segmentation read whole messages.
            segmented=bool(manifest.get("segmentation")),
            units=manifest.get("units", WINDOW_UNITS),
            # Artifacts trained before the length term score a message by its best window alone.
            length_penalty=float(manifest.get("length_penalty", 0.0)),
            device=resolve_device(device),
            window_tokens=window_tokens,
            stride=stride,
            token_budget=token_budget,
            max_chars=max_chars,
            precision=precision,
            overlap=overlap,
        )
        self.artifact_dir = path

    @classmethod
    def from_model(
        cls,
        model,
        tokenizer,
        *,
        labels: Sequence[str] | None = None,
        device: torch.device | str = "cpu",
        window_tokens: int = DEFAULT_WINDOW_TOKENS,
        stride: int = DEFAULT_STRIDE,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        max_chars: int = DEFAULT_MAX_CHARS,
        threshold: float | None = None,
        precision: str = AUTO,
        segmented: bool = True,
        units: str = WINDOW_UNITS,
        overlap: bool | None = None,
        length_penalty: float = 0.0,
    ) -> Scorer:
        """A Scorer over an in-memory model (training uses it to evaluate the way it scores).
        The model is put in eval mode; switch it back to train() yourself."""
        scorer = cls.__new__(cls)
        scorer._setup(
            model,
            tokenizer,
            labels=list(labels) if labels else labels_of(model),
            threshold=threshold,
            segmented=segmented,
            units=units,
            length_penalty=length_penalty,
            device=device if isinstance(device, torch.device) else resolve_device(device),
            window_tokens=window_tokens,
            stride=stride,
            token_budget=token_budget,
            max_chars=max_chars,
            precision=precision,
            overlap=overlap,
        )
        scorer.artifact_dir = None
        return scorer

    def with_precision(self, precision: str) -> Scorer:
        """This Scorer (same model, windows and thresholds) computing in another `precision`,
        with its own re-check counts."""
        other = copy.copy(self)
        other.precision = resolve_precision(precision, self.device)
        other._start_bookkeeping(self._watched)
        return other

    def _setup(
        self,
        model,
        tokenizer,
        *,
        labels: Sequence[str],
        threshold: float | None,
        segmented: bool,
        device: torch.device,
        units: str = WINDOW_UNITS,
        window_tokens: int,
        stride: int,
        token_budget: int,
        max_chars: int,
        precision: str,
        overlap: bool | None = None,
        length_penalty: float = 0.0,
    ) -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise ModelNotReady("The artifact's tokenizer is not a fast tokenizer (no offsets).")
        labels = list(labels)
        if len(labels) != model.config.num_labels or not labels or labels[0] != NO_CLAIM:
            raise ModelNotReady(f"Labels {labels} do not fit a head whose class 0 is {NO_CLAIM!r}.")
        check_window_settings(
            window_tokens, stride, max_positions=getattr(model.config, "max_position_embeddings", None)
        )
        if token_budget < window_tokens:
            raise ValueError(f"token_budget={token_budget} is smaller than one window ({window_tokens}).")
        if max_chars < 1:
            raise ValueError("max_chars must be positive.")
        self.labels = labels
        self.device = device
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.threshold = float(threshold) if threshold is not None else None
        self.segmented = segmented or units == SENTENCE_UNITS
        self.units = units
        if length_penalty < 0:
            raise ValueError(f"length_penalty must be >= 0, not {length_penalty}.")
        # The message score's log-odds are lowered by this times ln(routing windows) (calibration).
        self.length_penalty = float(length_penalty)
        self.window_tokens = window_tokens
        self.stride = stride
        self.token_budget = token_budget
        self.max_chars = max_chars
        self.precision = resolve_precision(precision, device)
        # Tokenise the next chunk while the device runs this one: on by default where the device
        # is not the CPU (on a CPU both would compete for the same cores).
        self.overlap = device.type != "cpu" if overlap is None else bool(overlap)
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._start_bookkeeping(set())

    def _start_bookkeeping(self, watched: set[float]) -> None:
        self._watched = set(watched)
        self._counts_lock = threading.Lock()
        self.recheck_counts = {"windows": 0, "rechecked": 0}

    # --- decision thresholds (bfloat16 re-checks) ----------------------------------------------

    def watch_threshold(self, threshold: float | None) -> None:
        """Register a decision threshold: in bfloat16, windows near it are re-scored in float32."""
        if threshold is not None:
            self._watched.add(float(threshold))

    @property
    def decision_thresholds(self) -> list[float]:
        """The manifest's threshold and every watched one, sorted."""
        found = set(self._watched)
        if self.threshold is not None:
            found.add(self.threshold)
        return sorted(found)

    def _near_decision(
        self, probabilities: np.ndarray, margin: float = RECHECK_MARGIN, shifts: Sequence[float] = (0.0,)
    ) -> np.ndarray:
        """Rows whose flag or claim type float32 could decide differently (module docstring).
        `shifts`: how far the length term moves a window's decision point in log-odds, one per
        window count among the messages scored (penalty * ln(n); 0 for one window)."""
        near = np.zeros(len(probabilities), dtype=bool)
        thresholds = [log_odds(t) for t in self.decision_thresholds]
        if not thresholds or not len(probabilities):
            return near
        odds = claim_log_odds(probabilities)
        for threshold in thresholds:
            for shift in shifts:
                near |= np.abs(odds - (threshold + shift)) < margin
        claims = np.sort(np.log(np.maximum(probabilities[:, 1:], np.finfo(np.float32).tiny)), axis=1)
        if claims.shape[1] >= 2:
            tied = claims[:, -1] - claims[:, -2] < margin
            near |= tied & (odds >= min(thresholds) - margin)
        return near

    # --- input checks ---------------------------------------------------------------------------

    def refusal_reason(self, text: object) -> str | None:
        """Why `score` would refuse this text, or None when it is scoreable. Cheap: no model."""
        if not isinstance(text, str):
            return f"a text must be a string, not {type(text).__name__}"
        if len(text) > self.max_chars:
            return f"the text is {len(text):,} characters long; the limit is {self.max_chars:,}"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "the text is not valid Unicode (it contains a lone surrogate)"
        if not has_content(text):
            return NOTHING_TO_SCORE
        return None

    def _check(self, texts: Sequence[str]) -> None:
        if isinstance(texts, str):
            raise ScoringInputError("score() takes a sequence of texts, not one string.")
        for index, text in enumerate(texts):
            reason = self.refusal_reason(text)
            if reason:
                raise ScoringInputError(reason, index=index)

    def parts(self, texts: Sequence[str]) -> list[list[Segment]]:
        """The parts of each text this Scorer reads apart (scoring.segmentation); none when the
        artifact reads whole texts."""
        return [segment(text) for text in texts] if self.segmented else [[] for _ in texts]

    def cut(
        self, texts: Sequence[str], parts: Sequence[Sequence[Segment]] | None = None
    ) -> list[list[Window]]:
        """The token windows of each text as this Scorer reads it, unchecked: each message part
        windowed on its own (windows.segment_windows) for a segmented artifact, the whole text
        otherwise. `parts`: `self.parts(texts)` when the caller already has them."""
        options = {"window_tokens": self.window_tokens, "stride": self.stride}
        if not self.segmented:
            return make_windows(self.tokenizer, list(texts), **options)
        return segment_windows(self.tokenizer, list(texts), segments=parts, units=self.units, **options)

    def windows(
        self, texts: Sequence[str], parts: Sequence[Sequence[Segment]] | None = None
    ) -> list[list[Window]]:
        """The token windows of each text (checked as `score` checks them)."""
        self._check(texts)
        per_text = self.cut(texts, parts)
        for index, windows in enumerate(per_text):
            if windows[0].n_content_tokens == 0:
                raise ScoringInputError(
                    "the text yields no tokens (only characters the tokenizer drops): nothing to score",
                    index=index,
                )
        return per_text

    # --- scoring -----------------------------------------------------------------------------------

    def window_probabilities(
        self, input_ids: Sequence[Sequence[int]], shifts: Sequence[float] = (0.0,)
    ) -> np.ndarray:
        """Class probabilities [n, labels] (float32) of token windows given as input ids.

        Identical windows run once; the rest run in length-sorted, dynamically padded batches
        of at most token_budget padded tokens, in the Scorer's precision (in bfloat16, the
        windows near a decision are run again in float32). Rows come back in the input order."""
        unique: dict[tuple[int, ...], int] = {}
        row_of = np.empty(len(input_ids), dtype=np.int64)
        for i, ids in enumerate(input_ids):
            row_of[i] = unique.setdefault(tuple(ids), len(unique))
        distinct = list(unique)
        probabilities = self._probabilities(distinct, self.precision)
        rechecked = 0
        if self.precision != FLOAT32:
            (near,) = np.nonzero(self._near_decision(probabilities, shifts=shifts))
            if len(near):
                probabilities[near] = self._probabilities([distinct[i] for i in near], FLOAT32)
            rechecked = len(near)
        with self._counts_lock:
            self.recheck_counts["windows"] += len(distinct)
            self.recheck_counts["rechecked"] += rechecked
        return probabilities[row_of]

    def _probabilities(self, windows: Sequence[tuple[int, ...]], precision: str) -> np.ndarray:
        probabilities = np.empty((len(windows), len(self.labels)), dtype=np.float32)
        lengths = [len(ids) for ids in windows]
        done: list[tuple[list[int], torch.Tensor]] = []
        with torch.inference_mode(), autocast(self.device, precision):
            for batch in length_sorted_batches(lengths, token_budget=self.token_budget):
                done.extend(self._forward_fitting(list(batch.indices), windows, lengths))
        if done:  # one device-to-host copy per call, after every batch was queued
            rows = [index for indices, _ in done for index in indices]
            probabilities[rows] = torch.cat([probs for _, probs in done]).cpu().numpy()
        return probabilities

    def _forward_fitting(
        self, indices: list[int], windows: Sequence[tuple[int, ...]], lengths: Sequence[int]
    ) -> list[tuple[list[int], torch.Tensor]]:
        """The class probabilities (on the device) of these windows, run as one batch; a batch the
        device has no memory for is halved until it fits (module docstring)."""
        pending, done = [indices], []
        while pending:
            part = pending.pop()
            failure = ""
            try:
                done.append((part, self._forward(part, windows, lengths)))
            except torch.OutOfMemoryError as exc:
                failure = str(exc).splitlines()[0] if str(exc) else "out of memory"
            if not failure:
                continue
            # Outside the except block: the failed pass's tensors are free once its traceback is.
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            if len(part) == 1:
                raise DeviceOutOfMemory(
                    f"one window of {lengths[part[0]]} tokens does not fit in {self.device}'s free "
                    f"memory: {failure}"
                ) from None
            logger.warning(
                "out of memory on %s for %d windows of up to %d tokens: halving the batch (%s)",
                self.device,
                len(part),
                max(lengths[i] for i in part),
                failure,
            )
            half = len(part) // 2
            pending.extend([part[half:], part[:half]])  # first half runs first
        return done

    def _forward(
        self, indices: list[int], windows: Sequence[tuple[int, ...]], lengths: Sequence[int]
    ) -> torch.Tensor:
        padded_length = max(lengths[index] for index in indices)
        ids = np.full((len(indices), padded_length), self._pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, index in enumerate(indices):
            ids[row, : lengths[index]] = windows[index]
            mask[row, : lengths[index]] = 1
        logits = self.model(input_ids=self._to_device(ids), attention_mask=self._to_device(mask)).logits
        return torch.softmax(logits.float(), dim=-1)

    def _to_device(self, array: np.ndarray) -> torch.Tensor:
        tensor = torch.from_numpy(array)
        if self.device.type == "cuda":  # pinned host memory: the copy does not block the host
            return tensor.pin_memory().to(self.device, non_blocking=True)
        return tensor.to(self.device)

    # 1 - P(no_claim) is computed as the sum of the claim probabilities: the same number, without
    # float32 cancellation when P(no_claim) is close to 1.

    def _run(
        self,
        texts: Sequence[str],
        parts: Sequence[Sequence[Segment]] | None = None,
        per_text: list[list[Window]] | None = None,
    ) -> tuple[list[list[Window]], np.ndarray, np.ndarray]:
        if per_text is None:
            per_text = self.windows(texts, parts)
        flat = [window for windows in per_text for window in windows]
        probabilities = self.window_probabilities([w.input_ids for w in flat], shifts=self._shifts(per_text))
        offsets = np.cumsum([0] + [len(windows) for windows in per_text])
        if self.precision != FLOAT32:
            rivals = self._rival_windows(per_text, probabilities, offsets)
            if rivals:
                probabilities[rivals] = self._probabilities(
                    [tuple(flat[i].input_ids) for i in rivals], FLOAT32
                )
                with self._counts_lock:
                    self.recheck_counts["rechecked"] += len(rivals)
        return per_text, probabilities, offsets

    def _rival_windows(
        self, per_text: Sequence[Sequence[Window]], probabilities: np.ndarray, offsets
    ) -> list[int]:
        """Flat indices of routing windows that could take the best window's place under float32
        with another claim type (module docstring): a flagged message's best window and every
        routing window of another claim type whose log-odds lie within RECHECK_MARGIN of it."""
        thresholds = [log_odds(t) for t in self.decision_thresholds]
        if not thresholds:
            return []
        odds = claim_log_odds(probabilities)
        types = np.argmax(probabilities[:, 1:], axis=1)
        rivals: set[int] = set()
        for index, windows in enumerate(per_text):
            routing = [offsets[index] + i for i, w in enumerate(windows) if w.routes]
            if len(routing) < 2:
                continue
            best = max(routing, key=lambda i: odds[i])
            if odds[best] < min(thresholds) - RECHECK_MARGIN:
                continue
            close = [
                i
                for i in routing
                if i != best and odds[best] - odds[i] < RECHECK_MARGIN and types[i] != types[best]
            ]
            if close:
                rivals.update([best, *close])
        return sorted(rivals)

    def _shifts(self, per_text: Sequence[Sequence[Window]]) -> list[float]:
        counts = {max(1, sum(1 for w in windows if w.routes)) for windows in per_text}
        return sorted({self.length_penalty * math.log(n) for n in counts}) or [0.0]

    def _message_scores(self, best_scores, per_text: Sequence[Sequence[Window]]) -> np.ndarray:
        """The best routing window's score of each text, discounted for its routing windows."""
        counts = [sum(1 for w in windows if w.routes) for windows in per_text]
        return length_discounted(best_scores, counts, self.length_penalty)

    def score(
        self, texts: Sequence[str], parts: Sequence[Sequence[Segment]] | None = None
    ) -> list[ScoreResult]:
        """Score each text: best-window score, claim type, probabilities and all window scores.
        `parts`: the parts to read of each text, when its source knows better than
        `segment` (an email's attachments, quoted history already seen: scoring.services.context);
        ignored by an artifact that reads whole texts. Raises ScoringInputError (nothing
        returned) when any text is refused."""
        if len(texts) == 0:
            return []
        self._check(texts)  # before segmenting: a refused text may not even be a string
        given = None
        if parts is not None and self.segmented:
            if len(parts) != len(texts):
                raise ValueError(f"{len(parts)} lists of parts for {len(texts)} texts")
            given = [list(p) for p in parts]
        if not self.overlap:
            return self._score_chunk(texts, given if given is not None else self.parts(texts))
        results: list[ScoreResult] = []
        for start, chunk, (parts, per_text) in self._prepared_chunks(texts, given):
            try:
                results.extend(self._score_chunk(chunk, parts, per_text))
            except ScoringInputError as exc:
                raise ScoringInputError(exc.reason, index=start + (exc.index or 0)) from exc
        return results

    def _prepared_chunks(
        self, texts: Sequence[str], given: list[list[Segment]] | None = None
    ) -> Iterator[tuple[int, Sequence[str], tuple]]:
        """(start, chunk, (parts, windows)) for chunks of about one forward budget of text, each
        chunk's segmentation and tokenisation running in a thread while the caller runs the one
        before. A chunk's refusal is raised when the caller reaches it, with its index in texts."""
        limit = max(1, CHARS_PER_BUDGET_TOKEN * self.token_budget)
        starts, size = [0], 0
        for index, text in enumerate(texts):
            if size and size + len(text) > limit:
                starts.append(index)
                size = 0
            size += len(text)
        bounds = list(zip(starts, [*starts[1:], len(texts)], strict=True))

        def prepare(first: int, last: int):
            chunk = texts[first:last]
            parts = given[first:last] if given is not None else self.parts(chunk)
            try:
                return parts, self.windows(chunk, parts)
            except ScoringInputError as exc:
                return parts, exc

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorer-tokenise") as pool:
            upcoming = pool.submit(prepare, *bounds[0])
            for number, (first, last) in enumerate(bounds):
                prepared = upcoming.result()
                if number + 1 < len(bounds):
                    upcoming = pool.submit(prepare, *bounds[number + 1])
                parts, per_text = prepared
                if isinstance(per_text, ScoringInputError):
                    raise ScoringInputError(per_text.reason, index=first + (per_text.index or 0))
                yield first, texts[first:last], (parts, per_text)

    def _score_chunk(
        self,
        texts: Sequence[str],
        parts: list[list[Segment]],
        per_text: list[list[Window]] | None = None,
    ) -> list[ScoreResult]:
        per_text, probabilities, offsets = self._run(texts, parts, per_text)
        claim_scores = probabilities[:, 1:].sum(axis=1)
        bests = []
        for index, windows in enumerate(per_text):
            scores = claim_scores[offsets[index] : offsets[index + 1]]
            bests.append(int(np.argmax(np.where([w.routes for w in windows], scores, -np.inf))))
        message_scores = self._message_scores(
            [claim_scores[offsets[i] + best] for i, best in enumerate(bests)], per_text
        )
        results = []
        for index, windows in enumerate(per_text):
            first, last = offsets[index], offsets[index + 1]
            scores = claim_scores[first:last]
            best = bests[index]
            probs = probabilities[first + best]
            claim_type = self.labels[1 + int(np.argmax(probs[1:]))]
            results.append(
                ScoreResult(
                    score=float(message_scores[index]),
                    claim_type=claim_type,
                    probabilities={label: float(p) for label, p in zip(self.labels, probs, strict=True)},
                    windows=[
                        WindowScore(w.start, w.end, float(s), w.kind, w.routes)
                        for w, s in zip(windows, scores, strict=True)
                    ],
                    best_window=best,
                    segments=parts[index],
                )
            )
        return results

    def claim_scores(self, texts: Sequence[str]) -> list[float]:
        """The fast path: each text's claim score (max over its routing windows), nothing else."""
        if len(texts) == 0:
            return []
        per_text, probabilities, offsets = self._run(texts)
        routes = np.array([w.routes for windows in per_text for w in windows])
        window_scores = np.where(routes, probabilities[:, 1:].sum(axis=1), -np.inf)
        best = np.maximum.reduceat(window_scores, offsets[:-1])
        return [float(s) for s in self._message_scores(best, per_text)]
