"""Files of many emails: an mbox file (the standard library's `mailbox`) and a directory of .eml
files. Each yields (position, SourceMessage or SourceError): a broken message is reported at its
position and the others are read.

An mbox escapes a body line that starts with "From " (which would otherwise start a new message)
as ">From "; the standard library gives it back escaped. Such a line is unescaped (mboxrd: one
">" less on a line that is ">"s and "From "), or a sentence of the sender's starting with "From"
would read as a quoted line, quoted history, which does not route. A line that was a real quote
of a "From " line in an mboxo file (which does not escape ">From ") loses its ">" and reads as
the sender's: a mistake that can only make the message more likely to be reviewed."""

from __future__ import annotations

import hashlib
import mailbox
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from scoring.sources.errors import SourceError
from scoring.sources.mail import MailLimits, parse_email
from scoring.sources.types import SourceMessage

Read = tuple[str, SourceMessage | SourceError]
_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)


def mbox_unescaped(raw: bytes) -> bytes:
    """A message's bytes as an mbox holds them, with its ">From " lines unescaped (module docstring)."""
    return _ESCAPED_FROM.sub(rb"\1", raw)


def _parsed(position: str, raw: bytes, limits: MailLimits) -> Read:
    try:
        return position, parse_email(raw, limits=limits)
    except SourceError as exc:
        return position, exc.at(position)


def count_mbox(path: Path) -> int:
    """How many messages the mbox holds (a scan for its "From " lines, for a progress bar)."""
    box = mailbox.mbox(path, create=False)
    try:
        return len(box)
    finally:
        box.close()


def _parse_job(job: tuple[str, bytes, MailLimits]) -> Read:
    position, raw, limits = job
    unescaped = mbox_unescaped(raw)
    read = _parsed(position, unescaped, limits)
    message = read[1]
    if unescaped != raw and isinstance(message, SourceMessage) and message.external_id.startswith("sha256:"):
        # A message without a Message-ID is known by the hash of its bytes: those the mbox holds,
        # as before the unescaping, so importing the same mbox again still changes nothing.
        read = position, replace(message, external_id="sha256:" + hashlib.sha256(raw).hexdigest())
    return read


def read_mbox(path: Path, *, limits: MailLimits, processes: int = 1) -> Iterator[Read]:
    """Every message of an mbox file, in order, positioned as "message N" (1-based). With
    `processes` > 1 the messages are parsed in that many other processes (spawned: they import
    no Django and share no database connection) while this one stores what they return."""
    box = mailbox.mbox(path, create=False)
    try:
        keys = list(box.iterkeys())
        if not keys and path.stat().st_size:
            raise SourceError(
                "not_an_mbox",
                f"{path.name} holds no message: an mbox starts each message with a 'From ' line.",
            )
        jobs = ((f"message {number}", box.get_bytes(key), limits) for number, key in enumerate(keys, start=1))
        if processes <= 1:
            for job in jobs:
                yield _parse_job(job)
            return
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            yield from pool.imap(_parse_job, jobs, chunksize=64)
    finally:
        box.close()


def eml_files(path: Path) -> list[Path]:
    """The .eml files under a directory, sorted by path (so positions are stable)."""
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() == ".eml")


def read_eml_files(files: list[Path], *, root: Path, limits: MailLimits) -> Iterator[Read]:
    """Each .eml file's message, positioned by its path under `root`."""
    for file in files:
        position = str(file.relative_to(root)) if file != root else file.name
        try:
            raw = file.read_bytes()
        except OSError as exc:
            yield (
                position,
                SourceError("unreadable", f"cannot read the file ({exc.strerror})", position=position),
            )
            continue
        yield _parsed(position, raw, limits)
