"""Real-looking email, generated: what the demo's mailbox, `bench_import` and the HTML-to-text
comparison read (pure: the standard library, and PDFium for the factsheet PDF).

A mail client does not send "a body": Outlook sends Word-generated HTML (MsoNormal paragraphs,
<o:p> tags, conditional comments, a style block), Gmail sends <div dir="ltr"> with <br> and a
gmail_quote blockquote under "On ... wrote:", newsletters are nested tables with a hidden
preheader, a button and an unsubscribe footer. `render_html` writes a text in one of those
styles; `build_email` wraps a text into a MIME message the way those clients do (plain,
HTML-only, multipart/alternative, with attachments, as a reply quoting its parent)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import format_datetime
from functools import lru_cache

from scoring.sources.documents import pdf_document

HTML_STYLES: tuple[str, ...] = ("outlook", "gmail", "newsletter")
# How a text is sent: text/plain only, HTML only, or both (multipart/alternative).
FORMS: tuple[str, ...] = ("plain", "html", "alternative")


def _paragraphs(text: str) -> list[list[str]]:
    return [block.split("\n") for block in text.strip().split("\n\n") if block.strip()]


def _outlook(text: str, quoted: str | None) -> str:
    paras = "".join(
        '<p class="MsoNormal">'
        + "<br>\n".join(html.escape(line) for line in lines)
        + "<o:p></o:p></p>\n<p class=MsoNormal><o:p>&nbsp;</o:p></p>\n"
        for lines in _paragraphs(text)
    )
    history = ""
    if quoted:
        history = (
            '<div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm">'
            '<p class="MsoNormal"><b>From:</b> Previous Sender &lt;prev@example.com&gt;<br>'
            "<b>Sent:</b> Monday, 3 March 2025 09:12<br><b>To:</b> Client &lt;client@example.com&gt;<br>"
            "<b>Subject:</b> Earlier message<o:p></o:p></p></div>\n"
            + "".join(
                f'<p class="MsoNormal">{"<br>".join(html.escape(x) for x in lines)}<o:p></o:p></p>\n'
                for lines in _paragraphs(quoted)
            )
        )
    return (
        '<html xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office" '
        'xmlns:w="urn:schemas-microsoft-com:office:word"><head>'
        '<meta http-equiv="Content-Type" content="text/html; charset=utf-8">'
        '<meta name="Generator" content="Microsoft Word 15 (filtered medium)">'
        "<style><!--\n/* Font Definitions */\n@font-face {font-family:Calibri;}\n"
        "p.MsoNormal, li.MsoNormal, div.MsoNormal {margin:0cm;font-size:11.0pt;"
        'font-family:"Calibri",sans-serif;}\n'
        "a:link, span.MsoHyperlink {color:#0563C1;text-decoration:underline;}\n--></style>"
        '<!--[if gte mso 9]><xml><o:shapedefaults v:ext="edit" spidmax="1026" /></xml><![endif]-->'
        '</head><body lang="EN-GB" link="#0563C1" vlink="#954F72" style="word-wrap:break-word">'
        f'<div class="WordSection1">\n{paras}{history}</div></body></html>'
    )


def _gmail(text: str, quoted: str | None) -> str:
    body = "<br><br>".join("<br>".join(html.escape(x) for x in lines) for lines in _paragraphs(text))
    history = ""
    if quoted:
        inner = "<br><br>".join("<br>".join(html.escape(x) for x in lines) for lines in _paragraphs(quoted))
        history = (
            '<br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">On Mon, 3 Mar 2025 at 09:12, '
            'Previous Sender &lt;<a href="mailto:prev@example.com">prev@example.com</a>&gt; wrote:<br></div>'
            '<blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex;border-left:1px solid '
            f'rgb(204,204,204);padding-left:1ex"><div dir="ltr">{inner}</div></blockquote></div>'
        )
    return f'<div dir="ltr">{body}</div>{history}\n'


def _newsletter(text: str, quoted: str | None) -> str:
    rows = "".join(
        '<tr><td style="padding:0 24px 16px 24px;font-family:Arial,sans-serif;font-size:15px;color:#333333">'
        + "<br>".join(html.escape(x) for x in lines)
        + "</td></tr>"
        for lines in _paragraphs(text)
    )
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Update</title>'
        '<style type="text/css">body{margin:0;padding:0} .btn a{color:#ffffff !important}'
        "@media only screen and (max-width:600px){.container{width:100% !important}}</style>"
        "<script>window.dataLayer=[];</script></head><body>"
        '<span style="display:none;font-size:1px;color:#ffffff;max-height:0;overflow:hidden">'
        "Your monthly update from the desk&nbsp;&zwnj;&nbsp;&zwnj;</span>"
        '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">'
        '<tr><td align="center">'
        '<table class="container" role="presentation" width="600" cellpadding="0" cellspacing="0">'
        '<tr><td style="padding:24px"><img src="cid:logo" alt="Northfield Wealth" width="120"></td></tr>'
        f"{rows}"
        '<tr><td class="btn" style="padding:8px 24px"><a href="https://example.com/portal" '
        'style="background:#0b5cab;padding:10px 18px;border-radius:4px">Open your portal</a></td></tr>'
        '<tr><td style="padding:24px;font-size:11px;color:#888888">'
        "Northfield Wealth &middot; 1 Example Street"
        ' &middot; <a href="https://example.com/unsubscribe">Unsubscribe</a></td></tr>'
        "</table></td></tr></table></body></html>"
    )


def render_html(text: str, style: str, *, quoted: str | None = None) -> str:
    """`text` (paragraphs split by blank lines) as the HTML a mail client of `style` writes, with
    `quoted` (an earlier message) under it as that client quotes it."""
    renderers = {"outlook": _outlook, "gmail": _gmail, "newsletter": _newsletter}
    if style not in renderers:
        raise ValueError(f"style must be one of {HTML_STYLES}, not {style!r}")
    return renderers[style](text, quoted)


def quote_plain(text: str, *, sender: str, when: datetime) -> str:
    """The Gmail-style plain-text quote of `text`: an attribution line and "> " lines."""
    lines = "\n".join(f"> {line}" if line else ">" for line in text.strip().split("\n"))
    return f"On {format_datetime(when)}, {sender} wrote:\n{lines}"


@dataclass(frozen=True)
class AttachmentSpec:
    """An attachment to add: name, MIME type and its content."""

    name: str
    content_type: str
    data: bytes


@dataclass
class MailSpec:
    """What `build_email` writes. `form`: plain | html | alternative; `html_style`: see HTML_STYLES;
    `quoted`: the parent's text, quoted under the body (a reply); `charset`: of the text parts."""

    text: str
    sender: str
    to: Sequence[str]
    subject: str
    date: datetime
    message_id: str
    form: str = "plain"
    html_style: str = "gmail"
    cc: Sequence[str] = ()
    in_reply_to: str | None = None
    references: Sequence[str] = ()
    quoted: str | None = None
    quoted_sender: str = "Previous Sender <prev@example.com>"
    quoted_date: datetime | None = None
    charset: str = "utf-8"
    attachments: Sequence[AttachmentSpec] = field(default_factory=tuple)


FACTSHEET_LINES = (
    "Quarterly factsheet",
    "Holdings by sector, ongoing charges of 0.45% a year and the dealing days are set out below.",
    "Your relationship manager can answer any question about this document.",
)


@lru_cache(maxsize=1)
def factsheet_pdf() -> bytes:
    """A real one-page PDF with an ordinary factsheet's words (no claim): the attachment of the
    demo's and `bench_import`'s mail, read as production reads a PDF (scoring.sources.documents)."""
    return pdf_document([list(FACTSHEET_LINES)])


def build_email(spec: MailSpec) -> EmailMessage:
    """A MIME message as a mail client sends it (see MailSpec)."""
    if spec.form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, not {spec.form!r}")
    message = EmailMessage()
    message["From"] = spec.sender
    message["To"] = ", ".join(spec.to)
    if spec.cc:
        message["Cc"] = ", ".join(spec.cc)
    message["Subject"] = spec.subject
    message["Date"] = format_datetime(spec.date)
    message["Message-ID"] = spec.message_id
    if spec.in_reply_to:
        message["In-Reply-To"] = spec.in_reply_to
    if spec.references:
        message["References"] = " ".join(spec.references)
    plain = spec.text
    if spec.quoted:
        plain = f"{spec.text}\n\n" + quote_plain(
            spec.quoted, sender=spec.quoted_sender, when=spec.quoted_date or spec.date
        )
    html_text = render_html(spec.text, spec.html_style, quoted=spec.quoted)
    if spec.form == "plain":
        message.set_content(plain, charset=spec.charset)
    elif spec.form == "html":
        message.set_content(html_text, subtype="html", charset=spec.charset)
    else:
        message.set_content(plain, charset=spec.charset)
        message.add_alternative(html_text, subtype="html", charset=spec.charset)
    for attachment in spec.attachments:
        maintype, _, subtype = attachment.content_type.partition("/")
        if attachment.content_type == "message/rfc822":  # a forward as attachment: the message itself
            inner = BytesParser(policy=policy.default).parsebytes(attachment.data)
            message.add_attachment(inner, filename=attachment.name)
        elif maintype == "text":
            message.add_attachment(attachment.data.decode("utf-8"), subtype=subtype, filename=attachment.name)
        else:
            message.add_attachment(
                attachment.data, maintype=maintype, subtype=subtype, filename=attachment.name
            )
    return message


MIX = (("plain", 0.40), ("html", 0.25), ("attachments", 0.15), ("reply", 0.20))


def write_mixed_mbox(path, texts: Sequence[str], *, seed: int = 0) -> dict[str, int]:
    """An mbox of len(texts) real-looking messages, one per text, in the MIX of kinds: plain
    text, HTML only (Outlook, Gmail or newsletter HTML), multipart/alternative with a PDF and a
    text attachment, and replies quoting an earlier message with In-Reply-To/References.
    Returns how many of each kind were written. (For `bench_import`.)"""
    import mailbox
    import random
    from datetime import UTC, timedelta

    rng = random.Random(f"mixed-mbox:{seed}")
    counts = {kind: 0 for kind, _ in MIX}
    start = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
    box = mailbox.mbox(path, create=True)
    box.lock()
    try:
        for index, text in enumerate(texts):
            kind = rng.choices([k for k, _ in MIX], weights=[w for _, w in MIX])[0]
            if kind == "reply" and index == 0:
                kind = "plain"
            counts[kind] += 1
            spec = MailSpec(
                text=text,
                sender=f"adviser{index % 50}@bank.example",
                to=[f"client{index % 200}@client.example"],
                subject=f"Portfolio note {index % 400}",
                date=start + timedelta(minutes=7 * index),
                message_id=f"<bench-{seed}-{index}@bank.example>",
            )
            if kind == "html":
                spec.form, spec.html_style = "html", HTML_STYLES[index % len(HTML_STYLES)]
            elif kind == "attachments":
                spec.form = "alternative"
                spec.attachments = (
                    AttachmentSpec("factsheet.pdf", "application/pdf", factsheet_pdf()),
                    AttachmentSpec("notes.txt", "text/plain", b"Agenda: review, fees, next meeting.\n"),
                )
            elif kind == "reply":
                parent = rng.randrange(max(0, index - 50), index)
                spec.subject = f"Re: Portfolio note {parent % 400}"
                spec.in_reply_to = f"<bench-{seed}-{parent}@bank.example>"
                spec.references = [spec.in_reply_to]
                spec.quoted = texts[parent]
                spec.quoted_date = start + timedelta(minutes=7 * parent)
            box.add(build_email(spec).as_bytes())
        box.flush()
    finally:
        box.unlock()
        box.close()
    return counts
