"""What a message is read with beyond its own text, from what its source told us
(scoring.services.sources): the scoring step's plan for a batch.

- An email's scored attachments are parts of their own (segmentation.ATTACHMENT, routing like the
  body) instead of being cut by `segment` as if they were the sender's text.
- Quoted history already seen in an earlier message of the same thread is not scored again: a
  quoted part whose lines (quote marks, attribution and header lines left out) are at least
  SEEN_SHARE found in the THREAD_SEEN_LOOKBACK earlier messages of its thread becomes a
  segmentation.SEEN part, kept for display and never windowed. (A bare forward keeps its quoted
  part: it is what its sender sends.)
- A chat line is also scored with the same sender's earlier lines of its conversation within
  CHAT_CONTEXT_SECONDS (at most CHAT_CONTEXT_LINES lines in all), joined by line breaks, and again
  with those earlier lines alone. The line takes the context's score (and claim type) when the
  context reaches the threshold, the line alone does not, and the earlier lines alone did not:
  it is the line that completes a claim split over several lines, and it is routed; the earlier
  lines keep their own predictions. Every line read in context stores that context (the lines'
  ids, the text, the three scores, whether it drove the score) on its Prediction.

Each message keeps its own record and prediction; nothing here writes."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field, is_dataclass, replace
from datetime import timedelta

from django.conf import settings

from scoring.models import Conversation, Message
from scoring.segmentation import ATTACHMENT, QUOTED, SEEN, Segment, segment

logger = logging.getLogger(__name__)

SEEN_SHARE = 0.9
_QUOTE_MARKS = re.compile(r"^[\s>]+")
_SPACES = re.compile(r"\s+")
_NOT_CONTENT = re.compile(
    r"^\s*(?:on\b.{4,300}\bwrote:?|(?:from|sent|date|to|cc|subject)\s*:.*|-{2,}.*-{2,}|"
    r"begin forwarded message:|_{8,}|-{8,})\s*$",
    re.IGNORECASE,
)


def _norm(line: str) -> str:
    return _SPACES.sub(" ", _QUOTE_MARKS.sub("", line)).strip().casefold()


@dataclass
class _Lines:
    message_ids: list[int]
    text: str  # the earlier lines and this one
    before: str  # the earlier lines alone


def score_with_parts(scorer, bodies: list[str], parts: list) -> list:
    """scorer.score(bodies), with the parts a plan gives (None: the text's own segmentation)."""
    if all(p is None for p in parts):
        return scorer.score(bodies)
    return scorer.score(
        bodies, parts=[segment(b) if p is None else p for b, p in zip(bodies, parts, strict=True)]
    )


@dataclass
class ScoringPlan:
    """For one batch, in the order of its texts: the parts each text is read in (None: its own
    segmentation), the full list of its parts for display (with SEEN parts), and the chat
    context of each line that has one."""

    parts: list[list[Segment] | None]
    shown: list[list[Segment] | None]
    seen: dict[int, list[dict]] = field(default_factory=dict)  # index -> [{start, end, message_id}]
    lines: dict[int, _Lines] = field(default_factory=dict)  # index -> chat context

    def with_context(self, scorer, results: list, *, threshold: float) -> list:
        """The Scorer's results (an exception in place of a failed text) with what this plan knows
        added: SEEN parts in their segments, and each chat line's context (module docstring)."""
        out = list(results)
        segmented = bool(getattr(scorer, "segmented", False))
        for index, result in enumerate(out):
            if isinstance(result, Exception) or not hasattr(result, "segments"):
                continue
            if segmented and index in self.seen:
                out[index] = replace(
                    result, segments=self.shown[index], context={"seen_quoted": self.seen[index]}
                )
        jobs = [
            (i, ctx) for i, ctx in self.lines.items() if is_dataclass(out[i]) and hasattr(out[i], "context")
        ]
        if not jobs:
            return out
        texts = [ctx.text for _, ctx in jobs] + [ctx.before for _, ctx in jobs]
        try:
            scored = scorer.score(texts)
        except Exception as exc:  # a context that cannot be scored leaves each line its own score
            logger.warning("chat context could not be scored (%r); lines keep their own scores", exc)
            return out
        for k, (index, ctx) in enumerate(jobs):
            line, full, before = out[index], scored[k], scored[len(jobs) + k]
            drove = full.score >= threshold > line.score and before.score < threshold
            info = {
                "message_ids": ctx.message_ids,
                "text": ctx.text,
                "score": float(full.score),
                "before_score": float(before.score),
                "line_score": float(line.score),
                "drove": drove,
                "seconds": settings.CHAT_CONTEXT_SECONDS,
            }
            context = {**line.context, "lines": info}
            if drove:
                out[index] = replace(
                    line,
                    score=full.score,
                    claim_type=full.claim_type,
                    probabilities=full.probabilities,
                    context=context,
                )
            else:
                out[index] = replace(line, context=context)
        return out


def _attachment_parts(body: str, attachments: list) -> tuple[int, list[Segment]]:
    spans = sorted(
        (int(a["start"]), int(a["end"]))
        for a in attachments or []
        if isinstance(a, dict)
        and a.get("scored")
        and isinstance(a.get("start"), int)
        and isinstance(a.get("end"), int)
        and 0 <= a["start"] < a["end"] <= len(body)
    )
    if not spans:
        return len(body), []
    return spans[0][0], [Segment(ATTACHMENT, start, end) for start, end in spans]


def _seen_lines(rows: list[dict]) -> set[str]:
    return {n for row in rows for n in (_norm(line) for line in row["body"].splitlines()) if len(n) > 1}


def _is_seen(body: str, seg: Segment, seen: set[str]) -> bool:
    lines = [_norm(line) for line in body[seg.start : seg.end].splitlines() if not _NOT_CONTENT.match(line)]
    lines = [line for line in lines if len(line) > 1]
    if not lines:
        return False
    return sum(line in seen for line in lines) >= SEEN_SHARE * len(lines)


def scoring_plan(*, message_ids: list[int], bodies: list[str]) -> ScoringPlan:
    """The plan for a batch (module docstring): two to four queries whatever its size."""
    rows = {
        row["id"]: row
        for row in Message.objects.filter(pk__in=message_ids).values(
            "id", "channel", "sender", "received_at", "conversation_id", "conversation__kind", "attachments"
        )
    }
    parts: list[list[Segment] | None] = []
    for message_id, body in zip(message_ids, bodies, strict=True):
        main_end, attached = _attachment_parts(body, (rows.get(message_id) or {}).get("attachments"))
        parts.append(segment(body[:main_end]) + attached if attached else None)
    plan = ScoringPlan(parts=parts, shown=list(parts))
    _plan_seen(plan, message_ids, bodies, rows)
    _plan_lines(plan, message_ids, bodies, rows)
    return plan


def _plan_seen(plan: ScoringPlan, message_ids: list[int], bodies: list[str], rows: dict) -> None:
    own = {index: plan.parts[index] or segment(body) for index, body in enumerate(bodies)}
    threads = {
        index: rows[mid]
        for index, mid in enumerate(message_ids)
        if mid in rows
        and rows[mid]["conversation__kind"] == Conversation.Kind.EMAIL_THREAD
        and any(s.kind == QUOTED for s in own[index])
    }
    if not threads or settings.THREAD_SEEN_LOOKBACK <= 0:
        return
    earlier = list(
        Message.objects.filter(conversation_id__in={r["conversation_id"] for r in threads.values()})
        .order_by("received_at", "id")
        .values("id", "conversation_id", "received_at", "body")
    )
    for index, row in threads.items():
        before = [
            e
            for e in earlier
            if e["conversation_id"] == row["conversation_id"]
            and (e["received_at"], e["id"]) < (row["received_at"], row["id"])
        ][-settings.THREAD_SEEN_LOOKBACK :]
        if not before:
            continue
        seen = _seen_lines(before)
        body = bodies[index]
        parts, shown, marked = [], [], []
        for seg in own[index]:
            if seg.kind == QUOTED and _is_seen(body, seg, seen):
                shown.append(Segment(SEEN, seg.start, seg.end))
                source = next(
                    (e["id"] for e in reversed(before) if _is_seen(body, seg, _seen_lines([e]))),
                    before[-1]["id"],
                )
                marked.append({"start": seg.start, "end": seg.end, "message_id": source})
            else:
                parts.append(seg)
                shown.append(seg)
        if marked and any(s.routes for s in parts):  # a bare forward keeps its quoted part
            plan.parts[index], plan.shown[index], plan.seen[index] = parts, shown, marked


def _plan_lines(plan: ScoringPlan, message_ids: list[int], bodies: list[str], rows: dict) -> None:
    window = timedelta(seconds=settings.CHAT_CONTEXT_SECONDS)
    chats = {
        index: rows[mid]
        for index, mid in enumerate(message_ids)
        if mid in rows and rows[mid]["conversation__kind"] == Conversation.Kind.CHAT
    }
    if not chats or settings.CHAT_CONTEXT_LINES <= 1 or not window:
        return
    times = [r["received_at"] for r in chats.values()]
    candidates = list(
        Message.objects.filter(
            conversation_id__in={r["conversation_id"] for r in chats.values()},
            sender__in={r["sender"] for r in chats.values()},
            received_at__gte=min(times) - window,
            received_at__lte=max(times),
        )
        .order_by("received_at", "id")
        .values("id", "conversation_id", "sender", "received_at", "body")
    )
    for index, row in chats.items():
        earlier = [
            c
            for c in candidates
            if c["conversation_id"] == row["conversation_id"]
            and c["sender"] == row["sender"]
            and row["received_at"] - window <= c["received_at"]
            and (c["received_at"], c["id"]) < (row["received_at"], row["id"])
        ][-(settings.CHAT_CONTEXT_LINES - 1) :]
        if not earlier:
            continue
        before = "\n".join(c["body"].strip() for c in earlier)
        plan.lines[index] = _Lines(
            message_ids=[c["id"] for c in earlier], text=f"{before}\n{bodies[index].strip()}", before=before
        )
