"""Message sources: email (RFC 5322 / MIME, mbox, directories of .eml) and chat exports (a Slack
workspace export, a generic JSONL/CSV transcript), read into SourceMessage values.

Pure Python and the standard library's `email` and `mailbox` (plus inscriptis for HTML): no
Django. scoring.services.sources stores what these modules read."""
