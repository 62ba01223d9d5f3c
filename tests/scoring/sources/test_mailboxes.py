"""An mbox read message by message: a broken one reported at its position, the others read; the
same reads whether parsed here or in other processes (what a large import does)."""

from __future__ import annotations

import hashlib
import mailbox

from scoring.segmentation import segment
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


def test_a_line_of_the_senders_that_starts_with_from_is_the_senders_not_a_quote(tmp_path):
    # given: an mbox writer escapes a body line "From ..." as ">From ..." (mboxrd: ">From " as ">>From ")
    path = tmp_path / "journal.mbox"
    box = mailbox.mbox(path, create=True)
    box.add(
        mail("Hi Ann,\n\nFrom next month your returns are guaranteed.\n\nBob", message_id="<a@x>").as_bytes()
    )
    box.add(
        mail("Noted.\n\nOn Tue, Ann wrote:\n> From here it looks guaranteed?", message_id="<b@x>").as_bytes()
    )
    box.flush()
    box.close()
    assert b"\n>From next month" in path.read_bytes()

    # when
    first, second = (message for _, message in read_mbox(path, limits=MailLimits()))

    # then: the sender's sentence is theirs (body, which routes), a quoted one stays quoted
    assert "\nFrom next month your returns are guaranteed." in first.body
    assert [s.kind for s in segment(first.body)] == ["body"]
    assert "\n> From here it looks guaranteed?" in second.body
    assert [s.kind for s in segment(second.body)][-1] == "quoted"


def test_a_message_without_a_message_id_keeps_the_hash_of_the_bytes_the_mbox_holds(tmp_path):
    """Its external id, so importing the same mbox again still changes nothing after the unescaping."""
    path = tmp_path / "journal.mbox"
    box = mailbox.mbox(path, create=True)
    key = box.add(b"From: bob@bank.example\nSubject: no id\n\nHi Ann,\n\nFrom next month it is guaranteed.\n")
    box.flush()
    stored = box.get_bytes(key)
    box.close()
    assert b"\n>From next month" in stored

    ((_, message),) = read_mbox(path, limits=MailLimits())

    assert "\nFrom next month it is guaranteed." in message.body
    assert message.external_id == "sha256:" + hashlib.sha256(stored).hexdigest()
