"""A Slack workspace export: a folder (or the .zip Slack hands out) with channels.json, users.json
and one folder per conversation holding a JSON file per day (YYYY-MM-DD.json, a list of
messages). Private channels (groups.json), group DMs (mpims.json) and DMs (dms.json, folders named
by id) are read when present.

Each message line is a message of its own (external id "slack:<conversation id>:<ts>"), sent by
the user's real name, in the conversation "slack:<conversation id>". Slack's markup is turned
into text (<@U123> -> @Name, <#C1|general> -> #general, <url|label> -> label, &amp; -> &).
Join/leave/topic notices are not messages and are skipped. A bot's card and a shared message are read
as _line_text says.

The whole export is checked before any message is read: a conversation listed in channels.json
(or the others) without its folder, a day file that is not a JSON list, or a .zip that would
expand past the limits refuses the export (SourceError) and nothing is stored."""

from __future__ import annotations

import html
import json
import re
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from scoring.sources.errors import SourceError
from scoring.sources.types import SourceMessage

# conversation lists: (file, whether folders are named by "name" (else by "id"), label)
LISTS = (
    ("channels.json", True, "channel"),
    ("groups.json", True, "private channel"),
    ("mpims.json", True, "group DM"),
    ("dms.json", False, "DM"),
)
SKIPPED_SUBTYPES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "group_join",
        "group_leave",
        "pinned_item",
        "unpinned_item",
        "tombstone",  # a deleted thread parent kept for its replies: "This message was deleted."
    }
)
_DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")


@dataclass(frozen=True)
class ExportLimits:
    """How large an export .zip may expand (settings: SLACK_EXPORT_MAX_BYTES, ARCHIVE_MAX_RATIO)."""

    max_bytes: int = 2 * 1024**3
    max_ratio: int = 100


class _Files:
    """The export's files, from a folder or a zip, by POSIX path relative to the export root."""

    def __init__(self, path: Path, limits: ExportLimits) -> None:
        self.path = path
        self.zip: zipfile.ZipFile | None = None
        self.budget = limits.max_bytes
        if path.is_dir():
            self.names = {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()}
            return
        try:
            self.zip = zipfile.ZipFile(path)
            members = [m for m in self.zip.infolist() if not m.is_dir()]
        except (zipfile.BadZipFile, OSError) as exc:
            raise SourceError(
                "not_a_slack_export", f"{path.name} is not a readable zip file ({exc})."
            ) from None
        declared = sum(m.file_size for m in members)
        packed = sum(m.compress_size for m in members) or 1
        if declared > limits.max_bytes or declared / packed > limits.max_ratio:
            raise SourceError(
                "archive_bomb",
                f"{path.name} would expand to {declared:,} bytes (ratio {declared / packed:,.0f}:1); "
                f"the limits are {limits.max_bytes:,} bytes and {limits.max_ratio}:1. Refused as a zip bomb.",
            )
        # A Slack zip may hold the export in one top folder: read paths relative to it.
        names = [m.filename for m in members]
        roots = {PurePosixPath(n).parts[0] for n in names if "/" in n}
        self.prefix = ""
        if not any(n == "channels.json" for n in names) and len(roots) == 1:
            self.prefix = f"{roots.pop()}/"
        self.names = {n[len(self.prefix) :] for n in names if n.startswith(self.prefix)}

    def read(self, name: str) -> bytes:
        if self.zip is None:
            return (self.path / name).read_bytes()
        with self.zip.open(self.prefix + name) as handle:
            data = handle.read(self.budget + 1)
        self.budget -= len(data)
        if self.budget < 0:
            raise SourceError(
                "archive_bomb", f"{self.path.name} expands past its declared size. Refused as a zip bomb."
            )
        return data

    def json(self, name: str):
        try:
            return json.loads(self.read(name).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SourceError("invalid_json", f"{name} is not valid JSON ({exc}).") from None

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()


@dataclass(frozen=True)
class _Conversation:
    id: str
    folder: str
    title: str
    days: tuple[str, ...]


def _users(files: _Files) -> dict[str, str]:
    if "users.json" not in files.names:
        return {}
    users = files.json("users.json")
    names = {}
    for user in users if isinstance(users, list) else []:
        if isinstance(user, dict) and user.get("id"):
            profile = user.get("profile") or {}
            names[user["id"]] = (
                user.get("real_name")
                or profile.get("real_name")
                or profile.get("display_name")
                or user.get("name")
                or user["id"]
            )
    return names


def _conversations(files: _Files) -> list[_Conversation]:
    if "channels.json" not in files.names:
        raise SourceError(
            "not_a_slack_export",
            f"{files.path.name} has no channels.json: it is not a Slack workspace export.",
        )
    found: list[_Conversation] = []
    for list_name, by_name, label in LISTS:
        if list_name not in files.names:
            continue
        entries = files.json(list_name)
        if not isinstance(entries, list):
            raise SourceError("invalid_json", f"{list_name} must be a list of conversations.")
        for entry in entries:
            if not isinstance(entry, dict) or not entry.get("id"):
                raise SourceError("invalid_json", f"{list_name} lists a conversation without an id.")
            folder = str(entry.get("name") if by_name else entry["id"]) or str(entry["id"])
            days = tuple(
                sorted(
                    n
                    for n in files.names
                    if n.startswith(f"{folder}/") and _DAY_FILE.match(n[len(folder) + 1 :])
                )
            )
            if not days:
                raise SourceError(
                    "missing_channel_file",
                    f"{list_name} lists the {label} {folder!r} ({entry['id']}), but the export has no "
                    f"{folder}/YYYY-MM-DD.json file for it: the export is incomplete, nothing was imported.",
                )
            title = f"#{folder}" if label in ("channel", "private channel") else f"{label} {folder}"
            found.append(_Conversation(str(entry["id"]), folder, title, days))
    return found


_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")
_LINK = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")


def slack_text(text: str, users: dict[str, str]) -> str:
    """Slack's message markup as plain text."""
    text = _MENTION.sub(lambda m: "@" + (users.get(m.group(1)) or m.group(2) or m.group(1)), text)
    text = _CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SPECIAL.sub(lambda m: "@" + m.group(1), text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1).removeprefix("mailto:"), text)
    return html.unescape(text)


def _attachment_text(attachment: dict) -> str:
    """A message attachment's text (a bot's or an integration's card): its pretext, title, text and
    fields, else its fallback."""
    pieces = [attachment.get(key) for key in ("pretext", "title", "text")]
    for field_ in attachment.get("fields") or []:
        if isinstance(field_, dict):
            pieces.append(": ".join(str(field_[k]) for k in ("title", "value") if field_.get(k)))
    text = "\n".join(str(p) for p in pieces if p and isinstance(p, str | int | float))
    return text or str(attachment.get("fallback") or "")


def _blocks_text(node) -> list[str]:
    """The text of Block Kit blocks: text objects (mrkdwn, plain_text) and rich text sections."""
    if isinstance(node, list):
        return [text for child in node for text in _blocks_text(child)]
    if not isinstance(node, dict):
        return []
    kind = node.get("type")
    if kind in ("mrkdwn", "plain_text"):
        return [node["text"]] if isinstance(node.get("text"), str) else []
    if kind in ("rich_text_section", "rich_text_preformatted", "rich_text_quote"):
        elements = [e for e in node.get("elements") or [] if isinstance(e, dict)]
        return ["".join(str(e.get("text") or e.get("url") or "") for e in elements)]
    return [text for key in ("text", "fields", "elements", "blocks") for text in _blocks_text(node.get(key))]


def _line_text(line: dict) -> str:
    """A line's text in Slack markup. A bot's or an integration's words may be only in its
    attachments or blocks (its "text" empty or a summary beside them), and they are its own; a message shared
    from elsewhere (an attachment marked is_share) is someone else's: its lines are quoted ("> ",
    quoted history, routing only when the line has nothing else). A link's preview (an attachment
    with from_url) is the page's, not the sender's, and is left out."""
    text = str(line.get("text") or "")
    blocks = [b for b in line.get("blocks") or [] if isinstance(b, dict)]
    if not text.strip():
        text = "\n".join(_blocks_text(blocks))
    else:
        # An app sends "text" as the notification's summary beside its blocks, which hold what it
        # says: the text of its layout blocks (section, header, context) not already in "text".
        # A person's rich_text block repeats their "text" and adds nothing.
        said = " ".join(text.split())
        extra = [t for t in _blocks_text([b for b in blocks if b.get("type") != "rich_text"]) if t.strip()]
        text = "\n".join([text, *(t for t in extra if " ".join(t.split()) not in said)])
    own, shared = [], []
    for attachment in line.get("attachments") or []:
        if not isinstance(attachment, dict):
            continue
        if attachment.get("is_share") or attachment.get("is_msg_unfurl"):
            author = attachment.get("author_name") or attachment.get("author_subname") or "someone"
            quoted = str(attachment.get("text") or attachment.get("fallback") or "")
            if quoted.strip():
                shared.append("\n".join(f"> {row}" for row in (f"{author}:", *quoted.splitlines())))
        elif not (attachment.get("from_url") or attachment.get("original_url")):
            own.append(_attachment_text(attachment))
    return "\n\n".join(piece for piece in (text, *own, *shared) if piece.strip())


def _messages_of(files: _Files, conversation: _Conversation, users: dict[str, str]) -> list[SourceMessage]:
    out: list[SourceMessage] = []
    for day in conversation.days:
        lines = files.json(day)
        if not isinstance(lines, list):
            raise SourceError("invalid_json", f"{day} must be a list of messages.")
        for line in lines:
            if not isinstance(line, dict) or line.get("type", "message") != "message":
                continue
            if line.get("subtype") in SKIPPED_SUBTYPES:
                continue
            text = slack_text(_line_text(line), users).strip()
            ts = str(line.get("ts") or "")
            if not text or not ts:
                continue
            try:
                sent_at = datetime.fromtimestamp(float(ts), UTC)
            except (ValueError, OverflowError, OSError):
                raise SourceError("invalid_json", f"{day}: a message has the timestamp {ts!r}.") from None
            user = str(line.get("user") or line.get("bot_id") or "")
            profile = line.get("user_profile") or {}
            sender = users.get(user) or profile.get("real_name") or line.get("username") or user or "unknown"
            files_listed = [
                {
                    "name": str(f.get("name") or f.get("title") or "file"),
                    "content_type": str(f.get("mimetype") or ""),
                    "size": int(f.get("size") or 0),
                    "scored": False,
                    "note": "not scored: a Slack file (not in the export)",
                }
                for f in line.get("files") or []
                if isinstance(f, dict)
            ]
            headers = {"source": "slack", "channel": conversation.title, "ts": ts, "user": user}
            if line.get("thread_ts"):
                headers["thread_ts"] = str(line["thread_ts"])
            out.append(
                SourceMessage(
                    external_id=f"slack:{conversation.id}:{ts}",
                    body=text,
                    sender=str(sender),
                    channel="chat",
                    received_at=sent_at,
                    headers=headers,
                    attachments=files_listed,
                    conversation_key=f"slack:{conversation.id}",
                    conversation_title=conversation.title,
                )
            )
    return out


def read_slack_export(path: Path, *, limits: ExportLimits | None = None) -> list[SourceMessage]:
    """Every message line of the export, conversation by conversation, in time order. Raises
    SourceError for an export that is not whole (module docstring) before returning anything."""
    files = _Files(path, limits or ExportLimits())
    try:
        users = _users(files)
        conversations = _conversations(files)
        messages: list[SourceMessage] = []
        for conversation in conversations:
            messages.extend(_messages_of(files, conversation, users))
    finally:
        files.close()
    return messages


def is_slack_export(path: Path) -> bool:
    """A folder with channels.json, or a .zip (checked when read)."""
    return (path.is_dir() and (path / "channels.json").is_file()) or path.suffix.lower() == ".zip"
