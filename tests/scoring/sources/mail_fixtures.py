"""Real-world-shaped emails, built in the tests: what mail clients send."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime
from email.message import EmailMessage

from scoring.sources.mailgen import AttachmentSpec, MailSpec, build_email

WHEN = datetime(2025, 3, 4, 9, 30, tzinfo=UTC)


def mail(text: str = "Hi Ann,\n\nThe statement is attached.\n\nBest,\nBob", **overrides) -> EmailMessage:
    values = {
        "text": text,
        "sender": "Bob Adviser <bob@bank.example>",
        "to": ["ann@client.example"],
        "subject": "Your statement",
        "date": WHEN,
        "message_id": "<m1@bank.example>",
    }
    values.update(overrides)
    return build_email(MailSpec(**values))


def raw_mail(*lines: str, body: bytes = b"Hello.\n") -> bytes:
    """A message written byte by byte: header lines (CRLF-free) and a body."""
    head = "\n".join(("From: Bob <bob@bank.example>", "Message-ID: <raw@bank.example>", *lines))
    return head.encode("ascii") + b"\n\n" + body


OUTLOOK_REPLY = (
    "Thanks Ann, noted.\n\n"
    "Kind regards,\nBob\n\n"
    "From: Ann Client <ann@client.example>\n"
    "Sent: Monday, 3 March 2025 17:02\n"
    "To: Bob Adviser <bob@bank.example>\n"
    "Subject: RE: Your statement\n\n"
    "Is the fund guaranteed to return 8%?\n"
)
GMAIL_REPLY = (
    "No, nothing is guaranteed; the fund can lose value.\n\n"
    "On Mon, 3 Mar 2025 at 17:02, Ann Client <ann@client.example> wrote:\n"
    "> Is the fund guaranteed to return 8%?\n"
)
FORWARD = (
    "FYI, a scam doing the rounds - do not reply to it.\n\n"
    "---------- Forwarded message ---------\n"
    "From: Lucky Wins <win@scam.example>\n"
    "Date: Mon, 3 Mar 2025\n"
    "Subject: Guaranteed 40% returns\n\n"
    "Invest now: 40% returns guaranteed, zero risk!\n"
)


def zip_of(files: dict[str, bytes], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def zip_bomb() -> bytes:
    """4 MB of zeros in about 4 KB: an expansion ratio of about 1,000 to 1, ten times the limit."""
    return zip_of({"report.txt": b"0" * (4 * 1024 * 1024)})


def big_attachment_mail(megabytes: int = 25) -> bytes:
    """A message with a `megabytes` MB attachment, written as a client sends it (base64 lines),
    cheaply: the content is "AAAA..." (zero bytes)."""
    line = b"A" * 76 + b"\n"
    encoded = line * (megabytes * 1024 * 1024 // 57 + 1)
    return (
        b"From: Bob <bob@bank.example>\nMessage-ID: <big@bank.example>\nSubject: video\n"
        b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=BB\n\n"
        b"--BB\nContent-Type: text/plain\n\nThe video is attached.\n"
        b"--BB\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename=video.bin\n"
        b"Content-Transfer-Encoding: base64\n\n" + encoded + b"--BB--\n"
    )


def with_attachment(name: str, content_type: str, data: bytes, **overrides) -> bytes:
    return mail(attachments=(AttachmentSpec(name, content_type, data),), **overrides).as_bytes()
