"""An mbox read message by message: a broken one reported at its position, the others read; the
same reads whether parsed here or in other processes (what a large import does)."""

from __future__ import annotations

import mailbox

from scoring.sources.errors import SourceError
from scoring.sources.mail import MailLimits
from scoring.sources.mailboxes import read_mbox
from tests.scoring.sources.mail_fixtures import mail, raw_mail


def test_an_mbox_reads_the_same_in_this_process_and_in_two_others(tmp_path):
    path = tmp_path / "journal.mbox"
    box = mailbox.mbox(path, create=True)
    box.add(mail("First.", message_id="<a@x>").as_bytes())
    box.add(raw_mail('Content-Type: multipart/mixed; boundary="b1"', body=b"--zz\n\nnone\n"))
    box.add(mail("Third.", message_id="<c@x>").as_bytes())
    box.flush()
    box.close()

    here = list(read_mbox(path, limits=MailLimits()))
    elsewhere = list(read_mbox(path, limits=MailLimits(), processes=2))

    def summary(reads):
        return [
            (p, r.code if isinstance(r, SourceError) else r.external_id, getattr(r, "position", ""))
            for p, r in reads
        ]

    assert (
        summary(here)
        == summary(elsewhere)
        == [
            ("message 1", "a@x", ""),
            ("message 2", "malformed_mime", "message 2"),
            ("message 3", "c@x", ""),
        ]
    )
