"""The demo's traffic as production delivers it: an mbox of real-looking email (plain, HTML-only,
multipart/alternative, attachments, replies quoting their parent), a Slack workspace export of
the chat lines (a claim split over two lines is sent as two lines), and a transcript of the text
messages, written from simulated corpus rows (monitoring.simulation) for the importers to read.

Pure file writing (no database): `write_demo_sources` returns the files and, per external id the
importers will give each message, its true label for the simulated reviewers."""

from __future__ import annotations

import json
import mailbox
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from scoring.segmentation import sentences
from scoring.sources.mailgen import HTML_STYLES, AttachmentSpec, MailSpec, build_email, factsheet_pdf

CLIENTS = ("liam.hughes", "ines.moreau", "george.baker", "fatima.quinn", "yusuf.demir", "mei.tanaka")
CHANNELS = (("C0DEMO01", "client-desk"), ("C0DEMO02", "advisers"), ("C0DEMO03", "sales-floor"))
DOMAIN = "demo.claimwatch.example"
NEUTRAL_NOTES = (
    "Agenda: portfolio review, fee schedule, next meeting date.\nPlease bring photo ID.\n",
    "Account number, sort code and the transfer reference are in the statement.\n",
)


@dataclass
class DemoRow:
    """One simulated message: its corpus row, when it is sent and under which id."""

    row: dict
    day_index: int
    sent_at: datetime
    key: str  # unique within the run


@dataclass
class DemoSources:
    """The written files and, per external id, (label, claim type) for the simulated reviewers."""

    mbox: Path
    slack: Path
    sms: Path
    labels: dict[str, tuple[int, str]] = field(default_factory=dict)


def _split_lines(row: dict) -> list[tuple[str, int]]:
    """A chat row as (line, label) pairs: a split claim goes out one sentence a line, the line
    that completes the claim (holding the end of its last rationale) labelled the claim."""
    body = row["body"]
    if "split_sentence" not in row.get("slices", ()) or row["label"] != 1:
        return [(body, row["label"])]
    spans = sentences(body)
    last_end = max((end for _, end in row.get("rationales") or []), default=len(body))
    out = []
    for start, end in spans:
        completes = start < last_end <= end
        out.append((body[start:end], 1 if completes else 0))
    return out if len(out) > 1 else [(body, row["label"])]


def _client(rng: random.Random) -> str:
    return f"{rng.choice(CLIENTS)}@client.example"


def _write_mbox(
    path: Path, emails: list[DemoRow], rng: random.Random, labels: dict, sent: list[tuple[DemoRow, str, str]]
) -> None:
    box = mailbox.mbox(path, create=True)
    box.lock()
    try:
        for number, item in enumerate(emails):
            row = item.row
            message_id = f"{item.key}@{DOMAIN}"
            recipient = _client(rng)
            spec = MailSpec(
                text=row["body"],
                sender=row.get("sender") or f"adviser@{DOMAIN}",
                to=[recipient],
                subject=rng.choice(
                    ("Your portfolio", "Quick update", "Following up", "Next steps", "Statement")
                ),
                date=item.sent_at,
                message_id=f"<{message_id}>",
                form=rng.choice(("plain", "plain", "html", "alternative")),
                html_style=HTML_STYLES[number % len(HTML_STYLES)],
            )
            if sent and rng.random() < 0.2:  # a reply in the thread of an earlier message
                parent, parent_id, parent_to = rng.choice(sent[-20:])
                spec.subject = f"Re: {parent.row.get('subject') or 'Your portfolio'}"
                spec.to = [parent_to]
                spec.in_reply_to = f"<{parent_id}>"
                spec.references = [f"<{parent_id}>"]
                spec.quoted = parent.row["body"]
                spec.quoted_sender = parent.row.get("sender") or ""
                spec.quoted_date = parent.sent_at
            row.setdefault("subject", spec.subject)
            roll = rng.random()
            if roll < 0.08:
                spec.attachments = (
                    AttachmentSpec("notes.txt", "text/plain", rng.choice(NEUTRAL_NOTES).encode()),
                )
            elif roll < 0.16:
                spec.attachments = (AttachmentSpec("factsheet.pdf", "application/pdf", factsheet_pdf()),)
            box.add(build_email(spec).as_bytes())
            labels[message_id] = (row["label"], row["claim_type"])
            sent.append((item, message_id, recipient))
        box.flush()
    finally:
        box.unlock()
        box.close()


def _write_slack(folder: Path, chats: list[DemoRow], labels: dict, users: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    days: dict[tuple[str, str], list[dict]] = {}
    for item in chats:
        sender = item.row.get("sender") or "Desk"
        user = users.setdefault(sender, f"U{len(users) + 1:06d}")
        channel_id, channel = CHANNELS[sum(map(ord, sender)) % len(CHANNELS)]
        for offset, (line, label) in enumerate(_split_lines(item.row)):
            at = item.sent_at + timedelta(seconds=20 * offset)
            ts = f"{at.timestamp():.6f}"
            days.setdefault((channel, at.date().isoformat()), []).append(
                {"type": "message", "user": user, "text": line, "ts": ts}
            )
            labels[f"slack:{channel_id}:{ts}"] = (label, item.row["claim_type"] if label else "no_claim")
    (folder / "users.json").write_text(
        json.dumps([{"id": u, "name": n.lower(), "real_name": n} for n, u in users.items()])
    )
    (folder / "channels.json").write_text(json.dumps([{"id": i, "name": n} for i, n in CHANNELS]))
    for _, channel in CHANNELS:
        (folder / channel).mkdir(exist_ok=True)
        if not any(c == channel for c, _ in days):  # an empty channel still has a file
            (
                folder / channel / f"{chats[0].sent_at.date().isoformat() if chats else '2000-01-01'}.json"
            ).write_text("[]")
    for (channel, day), lines in days.items():
        (folder / channel / f"{day}.json").write_text(json.dumps(sorted(lines, key=lambda m: float(m["ts"]))))


def _write_sms(path: Path, texts: list[DemoRow], labels: dict) -> None:
    rows = []
    for item in texts:
        external_id = f"sms-{item.key}"
        rows.append(
            {
                "external_id": external_id,
                "conversation_id": re.sub(r"\D", "", item.row.get("sender") or "0") or "0",
                "sender": item.row.get("sender") or "",
                "sent_at": item.sent_at.isoformat(),
                "text": item.row["body"],
                "channel": "sms",
            }
        )
        labels[external_id] = (item.row["label"], item.row["claim_type"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


class DemoWriter:
    """Writes the demo's traffic one day at a time (a daily journal drop), keeping what spans days:
    the random draws, the emails a later one may reply to, the Slack user ids."""

    def __init__(self, *, seed: int) -> None:
        self.rng = random.Random(f"demo-sources:{seed}")
        self.sent: list[tuple[DemoRow, str, str]] = []
        self.users: dict[str, str] = {}

    def write_day(self, rows: list[DemoRow], folder: Path) -> DemoSources:
        """Write the rows, by channel, as an mbox (email), a Slack export (chat) and a JSONL
        transcript (sms) under `folder`; see the module docstring."""
        folder.mkdir(parents=True, exist_ok=True)
        sources = DemoSources(
            mbox=folder / "journal.mbox", slack=folder / "slack-export", sms=folder / "sms.jsonl"
        )
        by_channel: dict[str, list[DemoRow]] = {"email": [], "chat": [], "sms": []}
        for item in sorted(rows, key=lambda r: r.sent_at):
            by_channel.get(item.row.get("channel"), by_channel["sms"]).append(item)
        if sources.mbox.exists():
            sources.mbox.unlink()
        _write_mbox(sources.mbox, by_channel["email"], self.rng, sources.labels, self.sent)
        _write_slack(sources.slack, by_channel["chat"], sources.labels, self.users)
        _write_sms(sources.sms, by_channel["sms"], sources.labels)
        return sources
