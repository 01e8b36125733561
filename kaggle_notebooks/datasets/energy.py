"""Dutch energy consumption by zip-code range (the network operators' open data).

Writes Electricity/<operator>_electricity_<year>.csv and Gas/<operator>_gas_<year>.csv with the
public files' columns. The same streets appear every year; consumption drifts down and the share
of smart meters rises over the years, with differences by city and connection type.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import rng, size

FILES = ["Electricity", "Gas"]
OPERATORS = {
    "liander": ("Liander N.V.", ["Amsterdam", "Haarlem", "Alkmaar", "Arnhem", "Zaandam", "Hilversum"]),
    "enexis": ("Enexis B.V.", ["Eindhoven", "Tilburg", "Groningen", "Maastricht", "Zwolle", "Enschede"]),
    "stedin": (
        "Stedin Netbeheer B.V.",
        ["Rotterdam", "Utrecht", "Den Haag", "Dordrecht", "Delft", "Amersfoort"],
    ),
}
STREET_WORDS = [
    "Kerk",
    "Molen",
    "Dorps",
    "School",
    "Stations",
    "Linden",
    "Eiken",
    "Beuken",
    "Wilgen",
    "Tulp",
    "Rozen",
    "Hoog",
    "Nieuwe",
    "Oude",
    "Markt",
    "Haven",
    "Dijk",
    "Berg",
    "Zee",
]
STREET_KINDS = ["straat", "weg", "laan", "plein", "gracht", "kade", "singel", "dreef"]
COLUMNS = [
    "net_manager",
    "purchase_area",
    "street",
    "zipcode_from",
    "zipcode_to",
    "city",
    "num_connections",
    "delivery_perc",
    "perc_of_active_connections",
    "type_conn_perc",
    "type_of_connection",
    "annual_consume",
    "annual_consume_lowtarif_perc",
    "smartmeter_perc",
]
CONNECTIONS = ["3x25", "1x35", "1x25", "3x35", "3x50", "3x63", "3x80"]


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("energy", seed)
    per_file = size(scale, 1_200, 6_000, 30_000)
    years = {"quick": range(2016, 2019), "standard": range(2010, 2020), "large": range(2009, 2021)}[scale]
    for sub in FILES:
        (out / sub).mkdir(parents=True, exist_ok=True)
    for op_i, (key, (manager, cities)) in enumerate(OPERATORS.items()):
        base = _streets(r, per_file, cities, op_i)
        for kind in ("electricity", "gas"):
            level = base["level"] * (1.0 if kind == "electricity" else 0.55)
            for k, year in enumerate(years):
                df = base.drop(columns=["level"]).copy()
                df.insert(0, "net_manager", manager)
                df.insert(1, "purchase_area", f"{manager.split()[0].upper()} {kind[:4].upper()}")
                t = k / max(1, len(years) - 1)
                consume = (level * (1 - 0.012 * k) * r.lognormal(0, 0.06, len(df))).round()
                df["num_connections"] = np.maximum(10, base["num_connections"] + r.integers(-2, 3, len(df)))
                df["delivery_perc"] = np.clip(r.normal(97 - 10 * t, 4, len(df)), 40, 100).round(2)
                df["perc_of_active_connections"] = np.clip(r.normal(98, 2.5, len(df)), 60, 100).round(2)
                df["type_conn_perc"] = np.clip(r.normal(80, 12, len(df)), 20, 100).round()
                df["type_of_connection"] = base["type_of_connection"]
                df["annual_consume"] = consume
                df["annual_consume_lowtarif_perc"] = (
                    np.clip(r.normal(55 - 5 * t, 12, len(df)), 0, 100).round(2)
                    if kind == "electricity"
                    else 0.0
                )
                df["smartmeter_perc"] = np.clip(r.normal(5 + 80 * t**1.3, 8, len(df)), 0, 100).round(2)
                df[COLUMNS].to_csv(out / kind.capitalize() / f"{key}_{kind}_{year}.csv", index=False)


def _streets(r: np.random.Generator, n: int, cities: list[str], op_i: int) -> pd.DataFrame:
    city_idx = r.choice(
        len(cities), n, p=np.linspace(2, 1, len(cities)) / np.linspace(2, 1, len(cities)).sum()
    )
    start = 1000 + 2800 * op_i // 3 + city_idx * 150 + r.integers(0, 150, n)
    letters = np.array([chr(65 + i) for i in range(26)])
    zip_from = [
        f"{s}{letters[a]}{letters[b]}"
        for s, a, b in zip(start, r.integers(0, 26, n), r.integers(0, 13, n), strict=True)
    ]
    zip_to = [
        z[:5] + letters[min(25, list(letters).index(z[5]) + int(d))]
        for z, d in zip(zip_from, r.integers(0, 12, n), strict=True)
    ]
    street = [
        f"{STREET_WORDS[a]}{STREET_KINDS[b]}"
        for a, b in zip(r.integers(0, len(STREET_WORDS), n), r.integers(0, len(STREET_KINDS), n), strict=True)
    ]
    conn = r.choice(CONNECTIONS, n, p=[0.62, 0.15, 0.1, 0.06, 0.04, 0.02, 0.01])
    amps = np.array([int(c.split("x")[0]) * int(c.split("x")[1]) for c in conn])
    city_factor = 1 + 0.15 * (city_idx == 0) - 0.1 * (city_idx % 3 == 2)
    level = r.lognormal(np.log(2600), 0.35, n) * city_factor * (amps / 75) ** 0.3
    return pd.DataFrame(
        {
            "street": street,
            "zipcode_from": zip_from,
            "zipcode_to": zip_to,
            "city": np.array(cities)[city_idx].astype(object),
            "num_connections": r.integers(10, 60, n),
            "type_of_connection": conn,
            "level": level,
        }
    )
