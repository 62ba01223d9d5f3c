"""Slot fillers: people, firms, products, companies, regulators, amounts, dates.

`BASE` is the vocabulary of the in-distribution corpus (train/val/test). `NOVEL` swaps in
products, companies and regulators that appear only in the novel_phrasing rows of the test
split. Every list is a tuple: iteration order never depends on hashing."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from scoring.corpus.words import (
    BROKERS,
    CATALYSTS,
    CITIES,
    COMPANIES,
    DEADLINES,
    DOCS,
    EVENTS,
    FIRMS_UK,
    FIRMS_US,
    FIRST_NAMES,
    FOODS,
    INDICES,
    ITEMS,
    LAST_NAMES,
    MONTHS,
    PAST_YEARS,
    PERIODS,
    PLACES,
    PRODUCT_KINDS,
    PRODUCT_PREFIXES,
    QUARTERS,
    REGULATOR_ACRONYMS,
    REGULATOR_APPROVED_ADJ,
    REGULATORS,
    RESTAURANTS,
    SEASONS,
    SECTORS,
    SOFTWARE,
    TEAMS,
    TIMES,
    TITLES,
    VENDORS,
    WEEKDAYS,
)


@dataclass(frozen=True)
class Vocabulary:
    """The lists that make a message's products, companies and regulators."""

    name: str
    product_prefixes: tuple[str, ...]
    product_kinds: tuple[str, ...]
    companies: tuple[tuple[str, str], ...]
    regulators: dict[str, tuple[str, ...]] = field(default_factory=dict)
    regulator_approved_adj: dict[str, tuple[str, ...]] = field(default_factory=dict)
    regulator_acronyms: dict[str, tuple[str, ...]] = field(default_factory=dict)


BASE = Vocabulary(
    name="base",
    product_prefixes=PRODUCT_PREFIXES,
    product_kinds=PRODUCT_KINDS,
    companies=COMPANIES,
    regulators=REGULATORS,
    regulator_approved_adj=REGULATOR_APPROVED_ADJ,
    regulator_acronyms=REGULATOR_ACRONYMS,
)

# Test-only vocabulary of the novel_phrasing slice. NOVEL_MARKERS must never occur in the
# train or val split (tests check it); keep them distinctive.
# fmt: off
NOVEL = Vocabulary(
    name="novel",
    product_prefixes=("Kittiwake", "Marrowstone", "Quillfeather", "Saltmarsh", "Brackenridge", "Ospreyhurst"),
    product_kinds=("Ascent Certificate", "Harvest Bond", "Compass Fund", "Tranche Plan", "Legacy Vault"),
    companies=(
        ("Yarrowind Optics", "YRWO"), ("Gossamer Fintech", "GSMR"), ("Pellucid Genomics", "PLCG"),
        ("Trevanion Ports", "TRVP"), ("Umbriel Batteries", "UMBB"), ("Wexcombe Minerals", "WXCM"),
    ),
    regulators={
        "us": ("BaFin", "ASIC", "the Monetary Authority of Singapore", "the Central Bank of Ireland"),
        "uk": ("BaFin", "ASIC", "the Monetary Authority of Singapore", "the Central Bank of Ireland"),
    },
    regulator_approved_adj={"us": ("a BaFin-approved", "an ASIC-approved"), "uk": ("a BaFin-approved",)},
    regulator_acronyms={"us": ("BaFin", "ASIC"), "uk": ("BaFin", "ASIC")},
)
NOVEL_VOCABULARY_MARKERS: tuple[str, ...] = (
    "Kittiwake", "Marrowstone", "Quillfeather", "Saltmarsh", "Brackenridge", "Ospreyhurst",
    "Ascent Certificate", "Harvest Bond", "Compass Fund", "Tranche Plan", "Legacy Vault",
    "Yarrowind", "Gossamer", "Pellucid", "Trevanion", "Umbriel", "Wexcombe",
    "YRWO", "GSMR", "PLCG", "TRVP", "UMBB", "WXCM",
    "BaFin", "ASIC", "Monetary Authority of Singapore", "Central Bank of Ireland",
)
# fmt: on


@dataclass(frozen=True)
class Persona:
    """Who sends a message: the advisor, their firm and region (currency, regulators)."""

    region: str
    first: str
    last: str
    firm: str

    @property
    def currency(self) -> str:
        return "$" if self.region == "us" else "£"

    @property
    def domain(self) -> str:
        compact = "".join(ch for ch in self.firm.lower() if ch.isalnum())
        return f"{compact}.example"

    def sender(self, channel: str, rng: random.Random) -> str:
        first = self.first.lower()
        last = "".join(ch for ch in self.last.lower() if ch.isalpha())
        if channel == "email":
            local = rng.choice((f"{first}.{last}", f"{first[0]}{last}", f"{first}", f"{first}_{last}"))
            return f"{local}@{self.domain}"
        if channel == "chat":
            return rng.choice((f"{self.first} {self.last}", f"{first}.{last}", f"{self.first} ({self.firm})"))
        if self.region == "uk":
            return f"+44 7700 900{rng.randrange(1000):03d}"
        area = rng.choice(("202", "312", "415", "617", "303", "512"))
        return f"+1 {area} 555 01{rng.randrange(100):02d}"


def draw_persona(rng: random.Random) -> Persona:
    region = rng.choice(("us", "uk"))
    firm = rng.choice(FIRMS_US if region == "us" else FIRMS_UK)
    return Persona(region=region, first=rng.choice(FIRST_NAMES), last=rng.choice(LAST_NAMES), firm=firm)


class Slots:
    """Per-message slot values: the same name gives the same value within a message."""

    def __init__(self, rng: random.Random, persona: Persona, vocabulary: Vocabulary = BASE) -> None:
        self.rng = rng
        self.persona = persona
        self.vocabulary = vocabulary
        self.values: dict[str, str] = {}
        self.numbers: dict[str, float] = {}

    def __call__(self, name: str) -> str:
        if name not in self.values:
            function = _SLOT_FUNCTIONS.get(name)
            if function is None:
                raise KeyError(f"unknown slot {{{name}}}")
            self.values[name] = function(self)
        return self.values[name]

    # helpers used by the slot functions
    def money(self, value: float, *, compact: bool = False) -> str:
        symbol = self.persona.currency
        if compact and value >= 1000 and value % 1000 == 0:
            return f"{symbol}{int(value // 1000)}k"
        return f"{symbol}{int(value):,}"

    def pct(self, value: float) -> str:
        text = f"{value:g}"
        return self.rng.choice((f"{text}%", f"{text}%", f"{text}%", f"{text} percent"))


def _product(s: Slots, key: str = "product_parts") -> str:
    prefix = s.rng.choice(s.vocabulary.product_prefixes)
    kind = s.rng.choice(s.vocabulary.product_kinds)
    s.values[key] = f"{prefix}|{kind}"
    article = s.rng.choice(("the", "the", "the", "our"))
    return f"{article} {prefix} {kind}"


def _product2(s: Slots) -> str:
    first = s("product")
    for _ in range(20):
        other = _product(s, "product2_parts")
        if other.split(" ", 1)[1] != first.split(" ", 1)[1]:
            return other
    return other


def _product_short(s: Slots) -> str:
    s("product")
    prefix, kind = s.values["product_parts"].split("|")
    noun = kind.split()[-1].lower()
    return s.rng.choice((f"the {prefix} {noun}", f"{prefix}", f"the {prefix} {kind}", f"{prefix} {noun}"))


def _company(s: Slots) -> tuple[str, str]:
    if "company_index" not in s.numbers:
        s.numbers["company_index"] = s.rng.randrange(len(s.vocabulary.companies))
    return s.vocabulary.companies[int(s.numbers["company_index"])]


def _stock(s: Slots) -> str:
    """A singular noun phrase for the company's stock (templates say "{stock} is ...")."""
    name, ticker = _company(s)
    return s.rng.choice((name, ticker, f"{name} stock", f"{ticker} stock"))


def _amount(s: Slots) -> str:
    value = s.rng.choice((5, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 75, 100, 120, 150, 200, 250)) * 1000
    s.numbers["amount"] = value
    return s.money(value, compact=s.rng.random() < 0.3)


def _grown_amount(s: Slots) -> str:
    s("amount")
    factor = s.rng.choice((1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.5, 3))
    return s.money(round(s.numbers["amount"] * factor, -3))


def _deadline(s: Slots) -> str:
    return s.rng.choice(DEADLINES).replace("{month}", s("month"))


def _date(s: Slots, key: str = "day") -> str:
    day = s.rng.randint(1, 28)
    s.numbers[key] = day
    month = s("month")
    return f"{month} {day}" if s.persona.region == "us" else f"{day} {month}"


def _date2(s: Slots) -> str:
    """A date 3 to 14 days after {date}."""
    s("date")
    day = int(s.numbers["day"]) + s.rng.randint(3, 14)
    month = s("month")
    if day > 28:
        day -= 28
        month = MONTHS[(MONTHS.index(month) + 1) % len(MONTHS)]
    return f"{month} {day}" if s.persona.region == "us" else f"{day} {month}"


def _regulator(s: Slots) -> str:
    return s.rng.choice(s.vocabulary.regulators[s.persona.region])


def _client_last(s: Slots) -> str:
    s("client_full")
    return s.values["client_full"].split(" ", 1)[1]


def _client_full(s: Slots) -> str:
    if "client" not in s.values:
        s.values["client"] = s.rng.choice(FIRST_NAMES)
    return f"{s.values['client']} {s.rng.choice(LAST_NAMES)}"


def _other_client(s: Slots) -> str:
    """Another client than the one addressed."""
    taken = (s.values.get("client"), s.persona.first)
    first = s.rng.choice([name for name in FIRST_NAMES if name not in taken])
    return f"{first} {s.rng.choice(LAST_NAMES)}"


def _colleague(s: Slots) -> str:
    taken = (s.values.get("client"), s.persona.first)
    return s.rng.choice([name for name in FIRST_NAMES if name not in taken])


_SLOT_FUNCTIONS = {
    "client": lambda s: s.rng.choice(FIRST_NAMES),
    "client_full": _client_full,
    "client_last": _client_last,
    "other_client": _other_client,
    "title": lambda s: s.rng.choice(TITLES),
    "advisor": lambda s: s.persona.first,
    "advisor_full": lambda s: f"{s.persona.first} {s.persona.last}",
    "firm": lambda s: s.persona.firm,
    "colleague": _colleague,
    "manager": lambda s: s.rng.choice(("my manager", "our manager", "the team lead", _colleague(s))),
    "product": _product,
    "product2": _product2,
    "product_short": _product_short,
    "stock": _stock,
    "ticker": lambda s: _company(s)[1],
    "company": lambda s: _company(s)[0],
    "catalyst": lambda s: s.rng.choice(CATALYSTS),
    "regulator": _regulator,
    "regulator_acronym": lambda s: s.rng.choice(s.vocabulary.regulator_acronyms[s.persona.region]),
    "regulator_approved_adj": lambda s: s.rng.choice(s.vocabulary.regulator_approved_adj[s.persona.region]),
    "yield_pct": lambda s: s.pct(s.rng.choice((3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 9, 10, 12))),
    "gain_pct": lambda s: s.pct(s.rng.choice((15, 20, 25, 30, 35, 40, 50, 60, 75, 80))),
    "small_pct": lambda s: s.pct(s.rng.choice((2, 3, 4, 5, 6, 8))),
    "fee_pct": lambda s: s.pct(s.rng.choice((0.25, 0.35, 0.5, 0.6, 0.75, 0.9, 1, 1.25))),
    "amount": _amount,
    "grown_amount": _grown_amount,
    "income": lambda s: s.money(s.rng.choice((200, 250, 300, 400, 450, 500, 600, 750, 900, 1200, 1500))),
    "price": lambda s: f"{s.persona.currency}{s.rng.choice((12, 18, 25, 40, 55, 64, 80, 95, 120, 150, 210))}",
    "nav_price": lambda s: f"{s.persona.currency}{s.rng.randint(1, 30)}.{s.rng.randrange(100):02d}",
    "period": lambda s: s.rng.choice(PERIODS),
    "deadline": _deadline,
    "month": lambda s: s.rng.choice(MONTHS),
    "months": lambda s: s.rng.choice(("three", "four", "six", "nine", "twelve", "18")),
    "year": lambda s: s.rng.choice(("2027", "2028", "2029", "2030")),
    "season": lambda s: s.rng.choice(SEASONS),
    "weekday": lambda s: s.rng.choice(WEEKDAYS),
    "time": lambda s: s.rng.choice(TIMES),
    "time2": lambda s: s.rng.choice([t for t in TIMES if t != s("time")]),
    "date": _date,
    "date2": _date2,
    "place": lambda s: s.rng.choice(PLACES),
    "city": lambda s: s.rng.choice(CITIES),
    "restaurant": lambda s: s.rng.choice(RESTAURANTS),
    "doc": lambda s: s.rng.choice(DOCS),
    "event": lambda s: s.rng.choice(EVENTS),
    "team": lambda s: s.rng.choice(TEAMS),
    "item": lambda s: s.rng.choice(ITEMS),
    "software": lambda s: s.rng.choice(SOFTWARE),
    "vendor": lambda s: s.rng.choice(VENDORS),
    "food": lambda s: s.rng.choice(FOODS),
    "number": lambda s: str(s.rng.randint(2, 40)),
    "ref": lambda s: f"{s.rng.randint(100000, 999999)}",
    "room": lambda s: str(s.rng.randint(101, 640)),
    "index": lambda s: s.rng.choice(INDICES),
    "broker": lambda s: s.rng.choice(BROKERS),
    "sector": lambda s: s.rng.choice(SECTORS),
    "past_year": lambda s: s.rng.choice(PAST_YEARS),
    "quarter": lambda s: s.rng.choice(QUARTERS),
    # a historical figure (last year's return, a fall), always stated as the past
    "past_pct": lambda s: f"{s.rng.choice((1.8, 2.4, 3.1, 4.6, 5.2, 6.8, 7.3, 8.9, 9.4, 11.2, 12.7, 14.1))}%",
    "rate_pct": lambda s: s.rng.choice(("3.75%", "4%", "4.25%", "4.5%", "4.75%", "5%", "5.25%")),
}
SLOT_NAMES: tuple[str, ...] = tuple(_SLOT_FUNCTIONS)
