"""Word lists for the slot fillers of the in-distribution corpus (see vocab.py).

Plain data. Every list is a tuple, so iteration order never depends on hashing."""

# fmt: off
FIRST_NAMES: tuple[str, ...] = (
    "Maria", "James", "Aisha", "Tom", "Priya", "Daniel", "Chen", "Sofia", "Liam", "Fatima", "Noah",
    "Grace", "Mateo", "Hannah", "Kwame", "Olivia", "Ravi", "Emma", "Yusuf", "Chloe", "Diego", "Zara",
    "Ethan", "Mei", "Oscar", "Leah", "Samuel", "Ines", "Arjun", "Ruth", "Felix", "Nadia", "George",
    "Amara", "Lucas", "Isla", "Omar", "Freya", "Hiro", "Alice", "Marcus", "Elena", "Kofi", "Sarah",
    "Ben", "Layla", "Patrick", "Ana", "Victor", "Jade", "Connor", "Esther", "Andre", "Molly", "Tariq",
    "Helen", "Raj", "Clara", "Joel", "Bianca", "Simon", "Nia", "Harvey", "Lina", "Dominic", "Rosa",
    "Aaron", "Keiko", "Ivan", "Megan",
)
LAST_NAMES: tuple[str, ...] = (
    "Okafor", "Smith", "Patel", "Nguyen", "Garcia", "Kowalski", "O'Brien", "Haddad", "Schmidt", "Rossi",
    "Mensah", "Johnson", "Tanaka", "Silva", "Brown", "Ahmed", "Murphy", "Lindqvist", "Fernandes",
    "Cohen", "Walker", "Novak", "Singh", "Dubois", "Kim", "Adeyemi", "Moreau", "Hughes", "Costa",
    "Jensen", "Wright", "Baker", "Reyes", "Chowdhury", "Evans", "Fischer", "Morgan", "Yilmaz", "Clarke",
    "Petrov", "Hall", "Santos", "Quinn", "Ward", "Osei", "Harris", "Lopez", "Bennett", "Ito",
    "Gallagher", "Khan", "Price", "Douglas", "Varga",
)
TITLES: tuple[str, ...] = ("Mr", "Ms", "Mrs", "Dr")
FIRMS_US: tuple[str, ...] = (
    "Northfield Wealth", "Harbor & Lane Advisors", "Bright Oak Capital", "Lakeshore Planning",
    "Alder Street Advisory", "Cedar Point Partners", "Mill Creek Financial", "Stonebridge Advisors",
    "Tidewater Wealth Group", "Maple Row Investments",
)
FIRMS_UK: tuple[str, ...] = (
    "Calder Private Clients", "Westmoor Partners", "Kingsbridge Financial", "Pemberton & Hale",
    "Greyfriars Wealth", "Ashdown Capital", "Thornbury Advisers", "Fenwick & Rowe",
    "Holloway Wealth Management", "Marlow Street Advisers",
)
REGULATORS: dict[str, tuple[str, ...]] = {
    "us": ("the SEC", "the Securities and Exchange Commission", "FINRA", "the CFTC"),
    "uk": ("the FCA", "the Financial Conduct Authority", "the PRA", "the Bank of England"),
}
REGULATOR_APPROVED_ADJ: dict[str, tuple[str, ...]] = {
    "us": ("an SEC-approved", "a FINRA-approved", "a CFTC-approved"),
    "uk": ("an FCA-approved", "a PRA-approved"),
}
REGULATOR_ACRONYMS: dict[str, tuple[str, ...]] = {
    "us": ("SEC", "FINRA", "CFTC"),
    "uk": ("FCA", "PRA"),
}
PRODUCT_PREFIXES: tuple[str, ...] = (
    "Evergreen", "Atlas", "Summit", "Harbor", "Crestview", "Northwind", "Bluewater", "Granite",
    "Oakridge", "Silverline", "Meadowbrook", "Keystone", "Lighthouse", "Redwood", "Sterling",
    "Clearwater", "Westgate", "Riverside", "Highland", "Pinecrest", "Foxglove", "Larkspur", "Juniper",
    "Cobalt", "Halcyon", "Amberley", "Wrenfield", "Beacon", "Falcon", "Orchard",
)
PRODUCT_KINDS: tuple[str, ...] = (
    "Income Fund", "Growth Fund", "Dividend Fund", "Bond Fund", "Balanced Portfolio", "Structured Note",
    "Yield Note", "Property Trust", "Infrastructure Fund", "Technology ETF", "Small-Cap Fund",
    "Global Equity Fund", "Money Market Fund", "Annuity", "Savings Bond", "Private Credit Fund",
    "Emerging Markets Fund", "Retirement Portfolio", "Green Energy Fund",
)
COMPANIES: tuple[tuple[str, str], ...] = (
    ("Kestrel Mining", "KSTM"), ("Orbis Therapeutics", "ORBT"), ("Vantor Systems", "VNTR"),
    ("Halden Foods", "HLDF"), ("Quantrix Labs", "QTRX"), ("Solara Power", "SLRP"),
    ("Brightwater Retail", "BWRT"), ("Corvid Networks", "CRVD"), ("Mirelle Biotech", "MRLB"),
    ("Pallas Aerospace", "PLAS"), ("Nimbus Cloud", "NMBC"), ("Tessaro Motors", "TSRM"),
    ("Ferrox Steel", "FRRX"), ("Lumen Health", "LMNH"), ("Arcadia Games", "ARCG"),
    ("Delphine Shipping", "DLPH"), ("Ostrava Chemicals", "OSTC"), ("Verdant Agritech", "VRDA"),
    ("Zephyr Airlines", "ZPHR"), ("Calloway Pharma", "CLWY"), ("Northstar Semis", "NSMI"),
    ("Ridgeline Energy", "RDGE"), ("Sable Robotics", "SBLR"), ("Glenmore Telecom", "GLNT"),
)
CATALYSTS: tuple[str, ...] = (
    "the merger closes", "the trial results come out", "the new CEO starts", "earnings are out",
    "the buyback starts", "the new factory opens", "the licence is renewed", "the spin-off completes",
)
WEEKDAYS: tuple[str, ...] = (
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
)
MONTHS: tuple[str, ...] = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December",
)
TIMES: tuple[str, ...] = (
    "9am", "9:30am", "10am", "10:30am", "11am", "11:45am", "noon", "1pm", "2pm", "2:30pm", "3pm",
    "3:15pm", "4pm", "4:30pm", "5pm",
)
PLACES: tuple[str, ...] = (
    "Conference Room B", "the third-floor meeting room", "the Leeds office", "the boardroom",
    "the client lounge", "Meeting Room 4", "the downtown office", "the Bristol office",
    "the training suite", "the small room by reception",
)
CITIES: tuple[str, ...] = (
    "London", "Leeds", "Manchester", "Edinburgh", "Bristol", "Boston", "Chicago", "Denver", "Austin",
    "Seattle", "Dublin", "Glasgow",
)
RESTAURANTS: tuple[str, ...] = (
    "Rosa's", "the Italian place on King Street", "Nando's", "the noodle bar", "Dishoom",
    "the deli downstairs", "Pret", "the Thai place", "Hawksmoor", "the pub on the corner",
)
DOCS: tuple[str, ...] = (
    "the quarterly statement", "the KYC form", "the signed mandate", "the fee schedule",
    "the annual report", "the onboarding pack", "the suitability report", "the transfer form",
    "the client agreement", "the tax certificate", "the account opening form", "the valuation report",
    "the direct debit mandate", "the meeting notes",
)
EVENTS: tuple[str, ...] = (
    "the client seminar", "the team offsite", "the town hall", "the annual compliance training",
    "the charity quiz", "the summer party", "the onboarding workshop", "the budget meeting",
)
TEAMS: tuple[str, ...] = (
    "operations", "client services", "onboarding", "IT", "facilities", "marketing", "finance",
    "paraplanning",
)
ITEMS: tuple[str, ...] = (
    "laptop", "headset", "monitor", "office chair", "printer", "standing desk", "webcam",
    "keyboard", "docking station", "coffee machine",
)
SOFTWARE: tuple[str, ...] = (
    "NoteDeck", "Slatebox", "Tallyworks", "Pipeline CRM", "CalendarPro", "DocuFlow", "Taskly",
    "MeetSpace", "Ledgerly", "FormStack",
)
VENDORS: tuple[str, ...] = (
    "Parcelink", "SwiftCourier", "Boxwell Logistics", "Quickship", "Metro Couriers", "RoyalPost",
)
FOODS: tuple[str, ...] = (
    "coffee", "pastries", "sandwiches", "pizza", "fruit", "sushi", "bagels",
)
SEASONS: tuple[str, ...] = (
    "the summer", "Christmas", "the end of the year", "spring", "the autumn",
)
DEADLINES: tuple[str, ...] = (
    "by {month}", "by the end of the year", "within six months", "by Christmas", "before the summer",
    "in the next twelve months", "by Q3", "by year-end", "within a year", "by next {month}",
    "over the next few months", "by the spring",
)
PERIODS: tuple[str, ...] = (
    "every year", "a year", "per year", "each year", "annually", "per annum",
)
INDICES: tuple[str, ...] = (
    "the S&P 500", "the FTSE 100", "the Nasdaq", "the FTSE 250", "the Dow", "the Stoxx 600",
    "the MSCI World index", "the Russell 2000", "the Nikkei", "the Euro Stoxx 50",
)
# Invented research houses and banks whose forecasts market commentary quotes.
BROKERS: tuple[str, ...] = (
    "Halberd Securities", "Crane & Moss", "Ellery Brothers", "Portman Research", "Vesta Capital Markets",
    "Redfern Economics", "Alcott & Finch", "Bramwell Partners", "Tarrant Global", "Osric Bank",
)
SECTORS: tuple[str, ...] = (
    "tech", "energy", "healthcare", "bank", "utility", "consumer staples", "industrial", "mining",
    "real estate", "small-cap",
)
PAST_YEARS: tuple[str, ...] = ("2022", "2023", "2024", "2025")
QUARTERS: tuple[str, ...] = ("Q1", "Q2", "Q3", "Q4")
# fmt: on
