"""The one error of the message sources: a specific code and a message fit to show a user."""

from __future__ import annotations

# code -> HTTP status the raw-message API answers with (scoring.api)
SIZE_CODES = frozenset({"message_too_large", "attachment_too_large", "archive_bomb", "too_large"})


class SourceError(Exception):
    """Input a source cannot read. `code` is machine-readable (malformed_mime, no_text_part,
    encrypted, unknown_charset, charset_mismatch, attachment_too_large, message_too_large, too_many_parts,
    nested_too_deep, message_loop, archive_bomb, not_an_email, missing_channel_file, ...);
    `position` says where in a file of many (a mailbox's message number, a file name)."""

    def __init__(self, code: str, message: str, *, position: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.position = position

    def __reduce__(self):  # picklable (parsed in another process: scoring.sources.mailboxes)
        return (SourceError, (self.code, self.message), {"position": self.position})

    def at(self, position: str) -> SourceError:
        """The same error, placed at `position` (for reports of a file of many messages)."""
        return SourceError(self.code, self.message, position=position)

    def __str__(self) -> str:
        return f"{self.position}: {self.message}" if self.position else self.message
