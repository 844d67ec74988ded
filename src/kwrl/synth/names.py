"""Word pools for names: people, companies, project code names, places.

Project code names are drawn through a seeded bijection over (adjective, noun) pairs indexed by
the world's index, so no two worlds of one dataset share a code name (every prompt names one),
which keeps prompts unique across a dataset of thousands of tasks.
"""

from __future__ import annotations

from kwrl.synth.rng import Rng

FIRST_NAMES = ["Aisha", "Alice", "Amara", "Ana", "Andre", "Arjun", "Ben", "Bianca", "Carlos", "Chen", "Chloe", "Daniel", "David", "Diego", "Elena", "Emeka", "Emma", "Ethan", "Fatima", "Felix", "Grace", "Hana", "Hassan", "Ines", "Isaac", "Ivan", "Jade", "James", "Jin", "Jonas", "Julia", "Kai", "Kenji", "Laila", "Leo", "Lina", "Lucas", "Maya", "Mei", "Mateo", "Mia", "Nadia", "Naomi", "Nikhil", "Noah", "Olga", "Omar", "Oscar", "Priya", "Rafael", "Rosa", "Ruth", "Sam", "Sara", "Sofia", "Tariq", "Theo", "Uma", "Victor", "Wei", "Yara", "Yusuf", "Zoe", "Zara", "Marcus", "Helena", "Pablo"]

LAST_NAMES = ["Abbott", "Adeyemi", "Alvarez", "Bauer", "Becker", "Brennan", "Castillo", "Chandra", "Chen", "Costa", "Dahl", "Das", "Dubois", "Eriksen", "Fischer", "Fontaine", "Garcia", "Gupta", "Haddad", "Hansen", "Hughes", "Ibrahim", "Ito", "Jansen", "Kato", "Keller", "Kim", "Kowalski", "Larsen", "Lee", "Lopez", "Maddox", "Mehta", "Moreau", "Murphy", "Nakamura", "Novak", "Okafor", "Olsen", "Park", "Patel", "Petrov", "Quinn", "Reyes", "Rossi", "Sato", "Schmidt", "Shah", "Silva", "Singh", "Sorensen", "Tanaka", "Torres", "Varga", "Walsh", "Weber", "Wong", "Yilmaz", "Zhang", "Ahmed", "Nguyen", "Morales", "Lindqvist", "Brooks", "Carver", "Delgado"]

COMPANY_STEMS = ["Acorn", "Alder", "Amber", "Apex", "Arbor", "Aster", "Atlas", "Aurora", "Beacon", "Birch", "Bluewater", "Boreal", "Brightline", "Cedar", "Cinder", "Clearwater", "Cobalt", "Coral", "Crest", "Crown", "Delta", "Driftwood", "Ember", "Evergreen", "Falcon", "Fern", "Fjord", "Foxglove", "Granite", "Halcyon", "Harbor", "Hawthorn", "Helix", "Highland", "Horizon", "Indigo", "Ironwood", "Juniper", "Keystone", "Lakeside", "Larch", "Lumen", "Magnolia", "Maple", "Meridian", "Mesa", "Northwind", "Oakridge", "Onyx", "Orchid", "Pinnacle", "Prairie", "Quarry", "Redwood", "Ridgeline", "Riverbend", "Sable", "Sage", "Sequoia", "Silverline", "Solstice", "Sterling", "Summit", "Tamarack", "Terra", "Thistle", "Timber", "Trident", "Tundra", "Vantage", "Verdant", "Willow", "Zenith"]

SECTORS: dict[str, tuple[str, ...]] = {
    "Investment Banking": (
        "Logistics", "Software", "Healthcare Services", "Specialty Chemicals", "Consumer Brands",
        "Industrial Automation", "Renewable Energy", "Payments", "Medical Devices", "Food Processing",
    ),
    "Law": (
        "Manufacturing", "Retail", "Biotech", "Shipping", "Telecoms", "Real Estate", "Media",
        "Construction", "Insurance", "Aerospace",
    ),
    "Management Consulting": (
        "Grocery Retail", "Regional Banking", "Hospital Networks", "Airlines", "Utilities",
        "Automotive Parts", "Hotels", "Telecom Operators", "Packaged Foods", "Pharmacy Chains",
    ),
}

COMPANY_SUFFIX: dict[str, tuple[str, ...]] = {
    "Investment Banking": ("Holdings", "Group", "Inc.", "plc", "Corp."),
    "Law": ("Ltd", "Inc.", "LLC", "S.A.", "GmbH"),
    "Management Consulting": ("Group", "Co.", "Inc.", "Holdings", "Partners"),
}

FIRM_SUFFIX: dict[str, tuple[str, ...]] = {
    "Investment Banking": ("Capital Partners", "Advisors", "& Co. Securities", "Capital Markets"),
    "Law": ("LLP", "& Partners LLP", "Legal LLP", "Law Group"),
    "Management Consulting": ("Consulting", "Strategy Partners", "Advisory Group", "& Associates"),
}

CODE_ADJ = ["Amber", "Arctic", "Azure", "Bold", "Bright", "Copper", "Crimson", "Crystal", "Dawn", "Desert", "Emerald", "Golden", "Granite", "Hidden", "Iron", "Ivory", "Jade", "Lunar", "Marble", "Midnight", "Misty", "Noble", "Ocean", "Onyx", "Polar", "Quiet", "Rapid", "Royal", "Ruby", "Sapphire", "Scarlet", "Shadow", "Silent", "Silver", "Solar", "Steel", "Stone", "Swift", "Velvet", "Violet", "Wild", "Winter", "Amberly", "Blue", "Cobalt", "Coastal", "Distant", "Echo", "Frost", "Gentle", "High", "Long", "North", "Open", "Prime", "Red", "Sharp", "Sky", "Storm", "True"]

CODE_NOUN = ["Albatross", "Anchor", "Arrow", "Aspen", "Badger", "Bison", "Cairn", "Canyon", "Cedar", "Comet", "Condor", "Coyote", "Cypress", "Dolphin", "Eagle", "Falcon", "Ferret", "Fox", "Gazelle", "Glacier", "Harbor", "Hawk", "Heron", "Ibis", "Jaguar", "Kestrel", "Lantern", "Lark", "Lynx", "Mantis", "Marlin", "Meadow", "Mistral", "Monsoon", "Moose", "Nomad", "Orca", "Osprey", "Otter", "Panther", "Pelican", "Phoenix", "Puma", "Quail", "Raven", "Reef", "Sparrow", "Summit", "Swan", "Thunder", "Tiger", "Topaz", "Tundra", "Viper", "Walrus", "Wolf", "Yak", "Zephyr", "Bear"]

CITIES = (
    "New York", "London", "Chicago", "Toronto", "Singapore", "Frankfurt", "Boston", "Dublin",
    "Sydney", "Madrid", "Paris", "Austin", "Denver", "Seattle", "Amsterdam", "Zurich",
)

GOVERNING_LAWS = ("New York", "Delaware", "England and Wales", "California", "Texas", "Ontario")


def code_names(seed: int, world_index: int, n: int) -> list[str]:
    """`n` code names unique within a dataset: a seeded permutation of all pairs, sliced by index."""
    pairs = len(CODE_ADJ) * len(CODE_NOUN)
    # An affine bijection i -> (a*i + b) mod pairs with gcd(a, pairs) == 1 spreads indices over pairs.
    rng = Rng("codenames", seed)
    a = rng.randrange(1, pairs)
    while _gcd(a, pairs) != 1:
        a += 1
    b = rng.randrange(pairs)
    out: list[str] = []
    for j in range(n):
        i = world_index * n + j
        k = (a * (i % pairs) + b) % pairs
        name = f"{CODE_ADJ[k // len(CODE_NOUN)]} {CODE_NOUN[k % len(CODE_NOUN)]}"
        if i >= pairs:
            name += f" {i // pairs + 1}"
        out.append(name)
    return out


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
