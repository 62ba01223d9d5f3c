"""What every source reads a message into (pure data, no Django)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Attachment:
    """An attachment as read: its name, MIME type, size in bytes, whether its text is scored
    and, when not, why (note); `unreadable`: text that could not be read (a charset that cannot
    be decoded, a broken or password-protected zip or PDF, an attached message whose text cannot
    be read), not a type that is not read (an image, a PDF of scanned pages)."""

    name: str
    content_type: str
    size: int
    scored: bool
    note: str = ""
    unreadable: bool = False


@dataclass(frozen=True)
class SourceMessage:
    """One message read from a source, ready to store.

    - `body`: the text the model reads and the reviewer sees (an email's text and its scored
      attachments: scoring.sources.mail);
    - `attachments`: [{name, content_type, size, scored, note, start?, end?}] ([start, end): the
      attachment's text in the body, when scored);
    - `headers`: the email headers kept (from, to, cc, date, message_id, in_reply_to,
      references, notes) or a chat line's source details;
    - `message_id`, `thread_refs` (References then In-Reply-To) and `participants`: how emails
      are linked into threads; `conversation_key`/`conversation_title`: the chat conversation a
      line belongs to (scoring.services.sources links both)."""

    external_id: str
    body: str
    sender: str = ""
    channel: str = "other"
    received_at: datetime | None = None
    subject: str = ""
    headers: dict = field(default_factory=dict)
    attachments: list[dict] = field(default_factory=list)
    message_id: str = ""
    thread_refs: tuple[str, ...] = ()
    participants: tuple[str, ...] = ()
    conversation_key: str = ""
    conversation_title: str = ""
