"""Channel framing (greetings, follow-ups, sign-offs) and the neutral padding of long messages.

Framing is shared by claims and negatives alike, so that nothing outside the core sentence
predicts the label. The padding bank is deliberately free of claim vocabulary and of the
hard-negative trigger words (a test checks PADDING_FORBIDDEN against it)."""

# ruff: noqa: E501 -- template data: one sentence per line reads better than wrapped strings

from __future__ import annotations

import random
import re
from collections.abc import Callable

from scoring.corpus.render import Rendered, render

# fmt: off
EMAIL_OPENERS: tuple[str, ...] = (
    "Hi {client},", "Dear {title} {client_last},", "Hello {client},", "{client},", "Good morning {client},",
    "Hi {client}, hope you had a good weekend.", "Hi {client}, thanks for your time {today|yesterday|on {weekday}}.",
    "Afternoon {client},", "",
)
EMAIL_FOLLOWUPS: tuple[str, ...] = (
    "", "", "", "Let me know if you have any questions.", "Happy to discuss on a call.",
    "Give me a ring if that's easier.", "I'll send the paperwork over {tomorrow|this afternoon|on {weekday}}.",
    "Talk soon.", "Any questions, just reply to this email.",
)
EMAIL_SIGNOFFS: tuple[str, ...] = (
    "Best,\n{advisor}", "Kind regards,\n{advisor_full}\n{firm}", "Thanks,\n{advisor}", "Speak soon,\n{advisor}",
    "{advisor_full}\n{firm}", "Many thanks,\n{advisor}", "Regards,\n{advisor_full}", "",
)
CHAT_OPENERS: tuple[str, ...] = ("", "", "", "hey {client}, ", "Hi {client} - ", "{client}, ", "morning! ", "quick one: ")
CHAT_CLOSERS: tuple[str, ...] = ("", "", "", " Let me know.", " Shout if you have questions.", " Cheers", " Talk later.")
SMS_OPENERS: tuple[str, ...] = ("", "", "{firm}: ", "Hi {client}, ", "{advisor} here: ")
SMS_CLOSERS: tuple[str, ...] = ("", "", " - {advisor}", " Call me on this number.", " {advisor}, {firm}")
INFORMAL_OPENERS: tuple[str, ...] = ("", "", "", "hey ", "{client} ", "yo ", "ok ", "btw ")
INFORMAL_CLOSERS: tuple[str, ...] = (
    "", "", "", " \U0001F680", " \U0001F44D", " \U0001F602", " \U0001F64F", " \U0001F4AF", " \U0001F642",
    " \U0001F605", " \U0001F525", " !!", " lmk",
)

# The sender's own lead-ins to a core sentence: the sender says it, in the first person or
# with a discourse marker. Shared by claims and negatives alike (like the openers above), so a
# lead-in predicts nothing and the model reads the sentence after it: "I'm pleased to let you
# know that your returns are guaranteed" is the sender's claim, where "my last adviser told me
# that ..." (a negative family) reports somebody else's. THAT_LEAD_INS take a declarative
# sentence as their complement; PUNCTUATED_LEAD_INS go before any sentence.
THAT_LEAD_INS: tuple[str, ...] = (
    "I'm pleased to let you know that", "I'm happy to tell you that", "I can tell you that",
    "I wanted to let you know that", "I'm writing to let you know that", "just so you know,",
    "I'm glad to say that", "the short answer is that", "I should mention that", "I can say that",
)
PUNCTUATED_LEAD_INS: tuple[str, ...] = (
    "To answer your question,", "Happy to clarify:", "Good news:", "Quick update:", "As requested,",
    "As discussed,", "Following up on our call,", "Short answer:", "In reply to your note,",
    "For what it's worth,", "Honestly,", "Just a heads-up:", "On your question about {product},",
    "Further to {weekday}'s meeting,", "To follow up,", "A quick note on {product}:",
)
# Share of (non-informal) cores that get a lead-in.
LEAD_IN_RATE = 0.3
_STARTS_WITH_SPEAKER = re.compile(r"^(?:I|I'\w+|We|We'\w+)\b")

PADDING_SENTENCES: tuple[str, ...] = (
    "The lifts in the east wing will be serviced on {weekday}, so please use the stairs or the west lifts between {time} and {time2}.",
    "Facilities have asked everyone to clear their desks by Friday evening so the cleaners can do a deep clean over the weekend.",
    "The kitchen on the second floor has a new coffee machine; instructions are taped to the side, and descaling happens every Monday.",
    "We are trialling a hot-desk booking system in {place}, and feedback forms are in the shared folder.",
    "IT will roll out the new laptop image on {weekday}, so please save your work and leave your machine switched on overnight.",
    "If you have trouble with the VPN, restart the client first and then raise a ticket with the {team} team, including a screenshot of the error.",
    "The printers on the third floor have been replaced, and you will need to tap your badge to release print jobs.",
    "Password resets now go through the self-service page, which takes about two minutes.",
    "The staff survey closes on {date}, and the results will be shared at the next town hall.",
    "Please make sure your timesheets for {month} are submitted by the last working day.",
    "Annual leave requests for the summer should go into the system by the end of {month}, so the rota can be planned.",
    "{colleague} is organising the leaving card for our office manager, and it is at reception if you want to sign it.",
    "The website refresh is on schedule, and the design team will share mock-ups of the new contact page on {weekday}.",
    "We finished migrating the client records to the new CRM last week; a handful of duplicate entries still need to be merged.",
    "The working group on document templates meets every other {weekday} at {time} in {place}.",
    "Thanks to everyone who helped with the office move; the last boxes were unpacked yesterday afternoon.",
    "If you are travelling to {city} for the conference, the hotel block is held until {date}, and the booking code is in the calendar invite.",
    "Train tickets should be booked through the travel portal so that receipts are captured automatically.",
    "The conference agenda has been published, and the sessions on client communication look particularly useful.",
    "New clients receive a welcome letter, a copy of the terms of business and a link to set up their online account.",
    "When a client changes address, please update the record and send a short confirmation letter within five working days.",
    "The scanning backlog in the post room has been cleared, so paper forms should appear in the system within a day.",
    "Meeting notes should be saved to the client file on the same day, with a short summary at the top.",
    "The charity bake sale raised a good amount for the local food bank, so thank you to all the bakers.",
    "Tickets for the summer party are available from reception, and partners are welcome.",
    "The five-a-side football team is looking for two more players for Thursday evenings.",
    "There are roadworks on the main road outside the office this week, so allow extra time if you are driving.",
    "The bike racks in the basement are being extended, and lockers will be available from {month}.",
    "Please remember to take your lunch boxes home before the long weekend; the fridges will be emptied on {weekday}.",
    "The fire alarm test is at {time} on {weekday}, and there is no need to leave the building unless the alarm continues.",
    "The shelves of reference books on the fourth floor have been reorganised by subject.",
    "Our team calendar now shows who is working from home, so please keep your status up to date.",
    "The next lunch-and-learn session is about writing clear emails, and it will be recorded for anyone who cannot attend.",
    "Visitor badges should be handed back at reception at the end of the day.",
    "The post room closes at {time} on Fridays, so urgent letters need to be dropped off before then.",
    "Parking permits for the new quarter can be collected from the facilities desk from {weekday}.",
    "We have updated the style guide for letters, which now uses a larger font and shorter paragraphs.",
    "The client satisfaction survey had a high response rate this year, and most comments were about response times.",
    "Please use the new booking screens outside each meeting room rather than the old paper sheets.",
    "The quiet room on the first floor is meant for focused work and should not be booked for calls.",
    "Headsets have been ordered for everyone who asked, and they should arrive by the end of next week.",
    "Our phone system will switch to the new provider overnight on {weekday}, and your extension number stays the same.",
    "The archive boxes in the basement are being sent to off-site storage, so label anything you still need.",
    "The team photo is scheduled for {weekday} at {time} on the terrace, weather permitting.",
    "The induction programme for new joiners now includes a tour of each department and a buddy for the first month.",
    "Thank you for the feedback on the intranet; the search box has been moved to the top of every page.",
    "Bins for paper, cans and plastic are now on every floor next to the kitchens.",
    "The building management company will test the emergency lighting on the evening of {date}.",
    "Please keep the corridor by the post room clear, because deliveries arrive there every morning.",
    "The monthly all-hands meeting has moved to the larger room so that everyone fits comfortably.",
    "Our shared inbox is monitored between {time} and {time2}, and anything urgent outside those hours should go to the duty phone.",
    "The new welcome pack for clients includes a short glossary of common terms and a contact sheet.",
    "The {team} team has written a short guide to naming files, which should make the shared drive easier to search.",
    "Volunteers are needed to help at the school careers fair in {month}; it takes one afternoon.",
    "The kitchen dishwasher is run at {time} every day, so load your mugs before then.",
    "Our office in {city} has a new receptionist, and the main phone line now rings at the front desk.",
    "The accessibility review of our letters found several places where the text was too small to read comfortably.",
    "Stationery orders go in every Tuesday, so add what you need to the list on the shared drive.",
    "The leadership team will hold open office hours on {weekday} afternoons for anyone with questions about the reorganisation.",
    "We are replacing the carpets on the second floor over two weekends, starting on {date}.",
    "The minutes of the last operations meeting list three actions, and all of them are now complete.",
    "Client letters should be proofread by a colleague before they are sent, even when they are short.",
    "The first-aid kit in the kitchen has been restocked, and the list of trained first-aiders is on the noticeboard.",
    "The away day will include a short workshop on handling complaints and a walk along the river.",
    "Wi-Fi for guests now has its own network name, and the code changes every week.",
    "The old filing cabinets will be collected on {weekday}, so please empty them by the day before.",
    "We are collecting ideas for next year's charity partner, and the shortlist will be put to a vote in {month}.",
    "The book club is reading a novel set in {city} this month, and new members are always welcome.",
    "The heating in the west wing has been repaired, so the portable heaters can go back to the store room.",
    "The onboarding checklist has been shortened so that new clients can finish it in one sitting.",
    "Our standard reply time for client emails is one working day, and most emails are answered sooner.",
    "The lost property box at reception currently holds two umbrellas, a scarf and a set of keys.",
    "Calendar invites for the quarterly planning sessions will go out by {weekday}.",
    "The printers will be offline for about an hour on {weekday} morning while the new drivers are installed.",
    "The building is closed to visitors after {time2} unless a host signs them in at the front desk.",
    "Team leads have been asked to share their holiday plans for {month} so that cover can be arranged early.",
    "The newsletter is looking for short articles about life in the office, with photos if you have them.",
    "The cycle-to-work scheme opens again in {month}, and the details are on the intranet.",
    "The screens in the meeting rooms now connect wirelessly, and the cables have been tidied away.",
    "Our auditors will visit the office on {date} to look at the filing system and talk to a few colleagues.",
    "The canteen menu changes weekly, and the vegetarian option is now available every day.",
    "The recording of {weekday}'s training session is on the intranet for anyone who missed it.",
    "We have moved the team stand-up to {time} so that colleagues in {city} can join.",
    "Please label any food you leave in the fridge with your name and the date.",
    "The new starters this month will be introduced at the next team meeting in {place}.",
)
# fmt: on

# Short internal notices made of padding sentences: ordinary negatives, so that padding text
# is also seen on its own as no_claim and its presence predicts nothing.
_HALF = len(PADDING_SENTENCES) // 2
# Length caps keep a notice, greeting and sign-off included, within 60 words.
_FIRST = [s for s in PADDING_SENTENCES[:_HALF] if len(s.split()) <= 20]
_SECOND = [s for s in PADDING_SENTENCES[_HALF:] if len(s.split()) <= 14]
OFFICE_NOTICE: tuple[str, str] = ("neu-notice", "{" + "|".join(_FIRST) + "}{ {" + "|".join(_SECOND) + "}|}")

# Words the padding bank must never contain (claim vocabulary and hard-negative triggers).
PADDING_FORBIDDEN: tuple[str, ...] = (
    "guarantee", "guaranteed", "risk", "risk-free", "safe", "secure", "protect", "protected", "approve",
    "approved", "endorse", "endorsed", "SEC", "FCA", "FINRA", "regulator", "return", "returns", "returned",
    "yield", "profit", "double", "triple", "rise", "forecast", "certain", "promise", "lose", "loss",
    "gain", "grow", "growth", "invest", "investment", "fund", "percent", "backed", "interest",
)  # fmt: skip

_PRE_TOKEN = re.compile(r"\w+|[^\w\s]")
PADDING_POSITIONS: tuple[str, ...] = ("start", "middle", "end")


def pre_token_count(text: str) -> int:
    """Words and punctuation marks: a lower bound of the WordPiece token count."""
    return len(_PRE_TOKEN.findall(text))


def _fill(template: str, rng: random.Random, slot: Callable[[str], str]) -> str:
    return render(template, rng=rng, slot=slot).text


_FIRST_WORD = re.compile(r"[A-Za-z']+")


def _lower_first(text: str) -> str:
    """Lower-case the first letter after a greeting ("Hi Ana, the fund..."), but never "I",
    "I'll" or an acronym such as "SEC"."""
    match = _FIRST_WORD.match(text)
    if match is None:
        return text
    word = match.group(0)
    acronym = len(word) > 1 and not word[1:].islower()
    if word == "I" or word.startswith("I'") or not word[0].isupper() or acronym:
        return text
    return text[0].lower() + text[1:]


def lead_in(core: Rendered, *, rng: random.Random, slot: Callable[[str], str]) -> Rendered:
    """Put one of the sender's lead-ins before the core at LEAD_IN_RATE (see THAT_LEAD_INS).

    A that-clause lead-in only goes before a declarative core that does not already start with
    its speaker ("I can confirm that ...") and asks nothing; the rest get a punctuated one."""
    if rng.random() >= LEAD_IN_RATE:
        return core
    text = core.text
    declarative = "?" not in text and not _STARTS_WITH_SPEAKER.match(text) and text[:1].isalpha()
    choices = THAT_LEAD_INS + PUNCTUATED_LEAD_INS if declarative else PUNCTUATED_LEAD_INS
    lead = _fill(rng.choice(choices), rng, slot)
    lead = lead[:1].upper() + lead[1:]
    if core.lowerable:
        text = _lower_first(text)
    prefix = lead + " "
    return Rendered(prefix + text, core.shifted(len(prefix)), lowerable=True)


def frame_short(
    core: Rendered, *, channel: str, informal: bool, rng: random.Random, slot: Callable[[str], str]
) -> Rendered:
    """Wrap a core sentence in the greeting and sign-off usual for its channel."""
    text = core.text
    if informal:
        opener = _fill(rng.choice(INFORMAL_OPENERS), rng, slot)
        closer = rng.choice(INFORMAL_CLOSERS)
        ends_in_span = any(end == len(text) for _, end in core.spans)
        if text.endswith(".") and not ends_in_span and rng.random() < 0.8:
            text = text[:-1]
        text = _lower_first(text) if opener and core.lowerable else text
        return Rendered(opener + text + closer, core.shifted(len(opener)))
    if channel == "email":
        opener = _fill(rng.choice(EMAIL_OPENERS), rng, slot)
        followup = _fill(rng.choice(EMAIL_FOLLOWUPS), rng, slot)
        signoff = _fill(rng.choice(EMAIL_SIGNOFFS), rng, slot)
        head = f"{opener}\n\n" if opener else ""
        body = head + text + (f" {followup}" if followup else "") + (f"\n\n{signoff}" if signoff else "")
        return Rendered(body, core.shifted(len(head)))
    openers, closers = (CHAT_OPENERS, CHAT_CLOSERS) if channel == "chat" else (SMS_OPENERS, SMS_CLOSERS)
    opener_template = rng.choice(openers)
    if "{advisor}" in opener_template or "{firm}" in opener_template:
        closers = tuple(c for c in closers if "{advisor}" not in c and "{firm}" not in c)  # sign once
    opener = _fill(opener_template, rng, slot)
    closer = _fill(rng.choice(closers), rng, slot)
    if opener and not opener.endswith(": ") and core.lowerable:
        text = _lower_first(text)
    return Rendered(opener + text + closer, core.shifted(len(opener)))


def padding_paragraphs(rng: random.Random, slot: Callable[[str], str], *, target: int) -> list[str]:
    """Neutral paragraphs (2-5 sentences each) totalling at least `target` pre-tokens."""
    order = list(range(len(PADDING_SENTENCES)))
    rng.shuffle(order)
    paragraphs: list[str] = []
    current: list[str] = []
    size = rng.randint(2, 5)
    total = 0
    for index in order:
        sentence = _fill(PADDING_SENTENCES[index], rng, slot)
        current.append(sentence)
        total += pre_token_count(sentence)
        if len(current) == size:
            paragraphs.append(" ".join(current))
            current, size = [], rng.randint(2, 5)
        if total >= target:
            break
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def frame_padded(
    core: Rendered, *, position: str, rng: random.Random, slot: Callable[[str], str], target: int
) -> Rendered:
    """An email whose core paragraph sits at `position` among neutral padding paragraphs."""
    if position not in PADDING_POSITIONS:
        raise ValueError(f"position must be one of {PADDING_POSITIONS}, not {position!r}")
    paragraphs = padding_paragraphs(rng, slot, target=target)
    at = {"start": 0, "middle": (len(paragraphs) + 1) // 2, "end": len(paragraphs)}[position]
    opener = _fill(rng.choice(EMAIL_OPENERS[:-1]), rng, slot)
    signoff = _fill(rng.choice(EMAIL_SIGNOFFS[:-1]), rng, slot)
    before = "\n\n".join([opener, *paragraphs[:at]]) + "\n\n"
    after = "\n\n".join(["", *paragraphs[at:], signoff])
    return Rendered(before + core.text + after, core.shifted(len(before)))
