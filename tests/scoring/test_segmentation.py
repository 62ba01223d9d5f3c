"""Message segmentation (scoring.segmentation): which part the sender wrote, which is the
signature, which is quoted history; what routes."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.segmentation import (
    BODY,
    QUOTED,
    SIGNATURE,
    kind_at,
    routing_segments,
    segment,
    segments_json,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def parts(text: str) -> list[tuple[str, str]]:
    return [(s.kind, text[s.start : s.end]) for s in segment(text)]


def test_a_gmail_reply_is_body_signature_and_quoted_history():
    text = (
        "Hi Ana,\n\nNo, the income is not guaranteed.\n\nBest regards,\nTom Reyes\nSenior Adviser\n"
        "Securities offered through Harbor & Lane, member FINRA/SIPC.\n\n"
        "On Tue, 4 Mar 2025 at 09:12, Ana Roe <ana@roe.example> wrote:\n> Is the income guaranteed?\n> Ana\n"
    )
    assert [k for k, _ in parts(text)] == [BODY, SIGNATURE, QUOTED]
    assert parts(text)[0][1] == "Hi Ana,\n\nNo, the income is not guaranteed."
    assert parts(text)[2][1].startswith("On Tue, 4 Mar 2025") and parts(text)[2][1].endswith("> Ana")


def test_an_attribution_wrapped_over_two_lines_is_quoted():
    text = (
        "Sure, Thursday works.\n\nOn Mon, Jan 6, 2025 at 4:01 PM Jane Roe <jane@roe.example>\nwrote:\n\n"
        "> can we meet thursday?\n"
    )
    assert [k for k, _ in parts(text)] == [BODY, QUOTED]


def test_an_outlook_header_block_starts_the_history_and_everything_below_is_quoted():
    text = (
        "Attached as promised.\n\n________________________________\nFrom: Jane Doe <jane@doe.example>\n"
        "Sent: Monday, March 3, 2025 9:12 AM\nTo: Bob Smith\nSubject: RE: fund\n\n"
        "Can I lose money on this?\n\nJane"
    )
    kinds = parts(text)
    assert kinds[0] == (BODY, "Attached as promised.")
    assert kinds[1][0] == QUOTED and kinds[1][1].endswith("Can I lose money on this?\n\nJane")


def test_a_forward_separator_quotes_the_forwarded_message():
    text = (
        "Please see below - this is a scam, do not reply.\n\n---------- Forwarded message ---------\n"
        "From: Promo <x@y.example>\nDate: Mon, 3 Feb 2025\nSubject: Offer\n\nGuaranteed 30% monthly returns!"
    )
    assert [k for k, _ in parts(text)] == [BODY, QUOTED]


def test_inline_replies_between_quoted_lines_are_body():
    text = "> Is it safe?\nNo investment is.\n> And the fees?\n0.75% a year."
    assert parts(text) == [
        (QUOTED, "> Is it safe?"),
        (BODY, "No investment is."),
        (QUOTED, "> And the fees?"),
        (BODY, "0.75% a year."),
    ]


@pytest.mark.parametrize(
    "closing", ["Best,", "Kind regards,", "Thanks", "Cheers!", "Many thanks,", "Regards", "Yours sincerely,"]
)
def test_a_closing_formula_over_a_name_starts_the_signature(closing):
    text = f"The statement is attached.\n\n{closing}\nPriya"
    assert parts(text) == [(BODY, "The statement is attached."), (SIGNATURE, f"{closing}\nPriya")]


def test_a_closing_word_followed_by_a_sentence_is_not_a_sign_off():
    text = "Thanks!\nI've attached the form and the fee schedule.\nReturns on the fund are guaranteed at 6%."
    assert [k for k, _ in parts(text)] == [BODY]


def test_a_postscript_after_the_signature_is_the_senders_body_again():
    text = "See you Monday.\n\nCheers,\nBob\n\nP.S. The fund will double by March."
    assert parts(text)[-1] == (BODY, "P.S. The fund will double by March.")
    assert parts(text)[1][0] == SIGNATURE


def test_the_signature_delimiter_starts_the_signature():
    text = "Call me when you can.\n-- \nSam Patel | Wealth Manager\nNot FDIC insured. May lose value."
    assert [k for k, _ in parts(text)] == [BODY, SIGNATURE]


def test_a_chat_transcript_is_one_body():
    text = "[10:42] bob: new fund\n[10:43] bob: 8% a yr locked\n[10:44] ana: nice"
    assert parts(text) == [(BODY, text)]


def test_body_and_signature_route_and_quoted_history_does_not():
    text = "Yes.\n\nThanks,\nBob\n\nOn Mon, 3 Feb 2025, Ana <a@b.example> wrote:\n> Is it guaranteed?"
    segments = segment(text)
    assert [s.kind for s in routing_segments(segments)] == [BODY, SIGNATURE]
    assert [part["routes"] for part in segments_json(segments)] == [True, True, False]


def test_a_bare_forward_routes_its_quoted_text():
    text = "---------- Forwarded message ---------\nFrom: Bob <b@x.example>\nDate: Mon\nTo: Ana\n\nZero risk."
    segments = segment(text)
    assert [s.kind for s in segments] == [QUOTED]
    assert routing_segments(segments) == segments


def test_segments_cover_every_non_blank_line_in_order_and_never_overlap():
    text = "Hi,\n\nBody line.\n\nBest,\nAl\n\n> quoted\n\nreply\n"
    segments = segment(text)
    assert all(a.end <= b.start for a, b in itertools.pairwise(segments))
    covered = "".join(text[s.start : s.end] for s in segments)
    assert all(line.strip() in covered for line in text.splitlines() if line.strip())


def test_empty_and_blank_texts_have_no_segments():
    assert segment("") == [] and segment(" \n\n ") == []


def test_kind_at_names_the_part_a_span_falls_in():
    text = "Returns are guaranteed.\n\nBest,\nAl"
    segments = segment(text)
    assert kind_at(segments, 0, 7) == BODY
    assert kind_at(segments, text.index("Al"), len(text)) == SIGNATURE
    assert kind_at(segments, 1000, 1001) is None


def test_segmentation_imports_no_django():
    code = "import sys, scoring.segmentation; print(sorted(m for m in sys.modules if 'django' in m))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "separator", ["---- Message ----", "----- Forwarded by Ann Lee -----", "-- Mensagem --"]
)
def test_a_labelled_dash_line_over_a_from_line_quotes_what_follows(separator):
    text = (
        "Compliance, for the file: received this on LinkedIn, I have not replied.\n\nRegards,\nMarcus\n\n"
        f'{separator}\nFrom: Ava (Northbridge Quant)\n"Our AI bot returns 3% weekly with zero risk."'
    )
    assert [k for k, _ in parts(text)] == [BODY, SIGNATURE, QUOTED]


def test_a_labelled_dash_line_with_no_from_line_under_it_stays_body():
    text = (
        "Agenda for Tuesday\n\n---- Fees ----\nThe fee is 0.75% a year.\n\n"
        "---- Risks ----\nYou may lose money."
    )
    assert {k for k, _ in parts(text)} == {BODY}


@pytest.mark.parametrize(
    "header",
    [
        # French Outlook: a (no-break) space before the colon
        "De : Jean Dupont <jean@dupont.example>\nEnvoyé : mardi 4 mars 2025 09:12\nÀ : Bob\nObjet : x",
        "De\u00a0: Jean Dupont <jean@dupont.example>\nEnvoyé\u00a0: mardi\nÀ\u00a0: Bob\nObjet\u00a0: x",
        "De: Juan <juan@ruiz.example>\nEnviado: martes, 4 de marzo de 2025 9:12\nPara: Bob\nAsunto: x",
        "Da: Mario <mario@rossi.example>\nInviato: martedì 4 marzo 2025 09:12\nA: Bob\nOggetto: x",
        "Van: Piet <piet@jansen.example>\nVerzonden: dinsdag 4 maart 2025 09:12\nAan: Bob\nOnderwerp: x",
        "De: João <joao@silva.example>\nEnviada em: terça-feira, 4 de março de 2025\nPara: Bob",
        "-------- Weitergeleitete Nachricht --------\nBetreff: Anlage\nDatum: Tue, 4 Mar 2025\nVon: Hans",
        "-----Message d'origine-----\nDe : Jean\nEnvoyé : mardi\nÀ : Bob\nObjet : x",
    ],
)
def test_a_localised_outlook_header_block_or_forward_line_quotes_what_follows(header):
    text = f"Merci, je regarde.\n\n{header}\n\nRendement garanti, sans risque !"
    assert parts(text) == [
        (BODY, "Merci, je regarde."),
        (QUOTED, f"{header}\n\nRendement garanti, sans risque !"),
    ]


@pytest.mark.parametrize(
    "attribution",
    [
        "Am Di., 4. März 2025 um 09:12 Uhr schrieb Hans Muster <hans@muster.example>:",
        "Am 04.03.2025 um 09:12 schrieb Hans Muster:",
        "Op di 4 mrt 2025 om 09:12 schreef Piet Jansen <piet@jansen.example>:",
        "Em ter., 4 de mar. de 2025 às 09:12, João <joao@silva.example> escreveu:",
    ],
)
def test_an_attribution_with_the_name_after_the_verb_is_quoted(attribution):
    text = f"Danke, erledigt.\n\n{attribution}\n> Garantierte Rendite ohne Risiko?\n"
    assert parts(text) == [
        (BODY, "Danke, erledigt."),
        (QUOTED, f"{attribution}\n> Garantierte Rendite ohne Risiko?"),
    ]


def test_a_german_sentence_saying_who_wrote_stays_body():
    text = "Am Montag schrieb mir ein Kunde:\nIst die Rendite garantiert? Ja, sie ist garantiert."
    assert {k for k, _ in parts(text)} == {BODY}


@pytest.mark.parametrize(
    "text",
    [
        # a Pix receipt, a bank transfer, an itinerary pasted into a letter: From, To, Date alone
        "Olá Sr. Costa,\n\nSegue o comprovante.\nDe: João Costa\nPara: Fundo Renda Garantida XP\n"
        "Data: 05/05/2025\n\nComo combinado, o rendimento de 2% ao mês é garantido.",
        "Da: c/c 1234 Banca Intesa\nA: Fondo Sicuro SpA\nData: 5 maggio 2025\n\nIl 12% annuo è garantito.",
        "De: Madrid\nA: Lisboa\nFecha: 12 de junio\n\nEn el seminario el rendimiento es garantizado.",
        # a time of day in the sender's own sentence
        "Am Freitag um 15:00 rief ich Sie an und schrieb Ihnen danach:\nDer Fonds bringt garantiert 10 %.",
        "Am 3. März um 10:30 schrieb ich Ihnen bereits Folgendes:\nDer Fonds bringt garantiert 10 %.",
        "Op maandag om 14:00 schreef ik u al het volgende:\nHet fonds is gegarandeerd.",
        # a heading over a From: line that names no message
        "--- Transfer ---\nFrom: your savings account\nTo: the Guaranteed Income Fund (12% a year, guaranteed)",  # noqa: E501
    ],
    ids=["pix-receipt", "transfer", "itinerary", "de-sentence", "de-sentence-2", "nl-sentence", "heading"],
)
def test_the_senders_own_lines_that_look_like_a_header_stay_body(text):
    """Quoted history does not route: reading the sender's own claim as quoted would hide it."""
    assert {k for k, _ in parts(text)} == {BODY}
