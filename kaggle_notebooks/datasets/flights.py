"""US domestic flights of 2015 (the DOT on-time data set): flights.csv, airlines.csv, airports.csv.

Same columns and codes as the public data; delays are a mixture of on-time departures and an
exponential tail whose size depends on airline, hour of day and month; ~1.5% cancellations.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import rng, size

FILES = ["flights.csv", "airlines.csv", "airports.csv"]

AIRLINES = {
    "UA": "United Air Lines Inc.",
    "AA": "American Airlines Inc.",
    "US": "US Airways Inc.",
    "F9": "Frontier Airlines Inc.",
    "B6": "JetBlue Airways",
    "OO": "Skywest Airlines Inc.",
    "AS": "Alaska Airlines Inc.",
    "NK": "Spirit Air Lines",
    "WN": "Southwest Airlines Co.",
    "DL": "Delta Air Lines Inc.",
    "EV": "Atlantic Southeast Airlines",
    "HA": "Hawaiian Airlines Inc.",
    "MQ": "American Eagle Airlines Inc.",
    "VX": "Virgin America",
}
AIRLINE_SHARE = [0.09, 0.12, 0.03, 0.015, 0.045, 0.10, 0.03, 0.02, 0.22, 0.15, 0.10, 0.013, 0.05, 0.01]
AIRLINE_LATENESS = [1.1, 1.0, 0.9, 1.3, 1.2, 1.0, 0.6, 1.4, 1.0, 0.7, 1.1, 0.4, 1.2, 0.9]
AIRPORTS = [  # IATA, name, city, state, latitude, longitude
    ("ATL", "Hartsfield-Jackson Atlanta International Airport", "Atlanta", "GA", 33.64, -84.43),
    ("ORD", "Chicago O'Hare International Airport", "Chicago", "IL", 41.98, -87.90),
    ("DFW", "Dallas/Fort Worth International Airport", "Dallas-Fort Worth", "TX", 32.90, -97.04),
    ("DEN", "Denver International Airport", "Denver", "CO", 39.86, -104.67),
    ("LAX", "Los Angeles International Airport", "Los Angeles", "CA", 33.94, -118.41),
    ("SFO", "San Francisco International Airport", "San Francisco", "CA", 37.62, -122.37),
    ("PHX", "Phoenix Sky Harbor International Airport", "Phoenix", "AZ", 33.43, -112.01),
    ("IAH", "George Bush Intercontinental Airport", "Houston", "TX", 29.98, -95.34),
    ("LAS", "McCarran International Airport", "Las Vegas", "NV", 36.08, -115.15),
    ("MSP", "Minneapolis-Saint Paul International Airport", "Minneapolis", "MN", 44.88, -93.22),
    ("SEA", "Seattle-Tacoma International Airport", "Seattle", "WA", 47.45, -122.31),
    ("MCO", "Orlando International Airport", "Orlando", "FL", 28.43, -81.31),
    ("DTW", "Detroit Metropolitan Airport", "Detroit", "MI", 42.21, -83.35),
    ("BOS", "Gen. Edward Lawrence Logan International Airport", "Boston", "MA", 42.36, -71.01),
    ("EWR", "Newark Liberty International Airport", "Newark", "NJ", 40.69, -74.17),
    ("CLT", "Charlotte Douglas International Airport", "Charlotte", "NC", 35.21, -80.94),
    ("LGA", "LaGuardia Airport", "New York", "NY", 40.78, -73.87),
    ("JFK", "John F. Kennedy International Airport", "New York", "NY", 40.64, -73.78),
    ("SLC", "Salt Lake City International Airport", "Salt Lake City", "UT", 40.79, -111.98),
    ("BWI", "Baltimore-Washington International Airport", "Baltimore", "MD", 39.18, -76.67),
    ("MDW", "Chicago Midway International Airport", "Chicago", "IL", 41.79, -87.75),
    ("MIA", "Miami International Airport", "Miami", "FL", 25.79, -80.29),
    ("SAN", "San Diego International Airport", "San Diego", "CA", 32.73, -117.19),
    ("DCA", "Ronald Reagan Washington National Airport", "Arlington", "VA", 38.85, -77.04),
    ("FLL", "Fort Lauderdale-Hollywood International Airport", "Ft. Lauderdale", "FL", 26.07, -80.15),
    ("HNL", "Honolulu International Airport", "Honolulu", "HI", 21.32, -157.92),
    ("PDX", "Portland International Airport", "Portland", "OR", 45.59, -122.60),
    ("STL", "St. Louis International Airport at Lambert Field", "St. Louis", "MO", 38.75, -90.37),
    ("AUS", "Austin-Bergstrom International Airport", "Austin", "TX", 30.19, -97.67),
    ("BNA", "Nashville International Airport", "Nashville", "TN", 36.12, -86.68),
]
DELAY_CAUSES = ["AIR_SYSTEM_DELAY", "SECURITY_DELAY", "AIRLINE_DELAY", "LATE_AIRCRAFT_DELAY", "WEATHER_DELAY"]


def _hhmm(minutes: np.ndarray) -> np.ndarray:
    m = np.mod(np.round(minutes), 1440)
    return (m // 60) * 100 + m % 60


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("flights", seed)
    n = size(scale, 20_000, 400_000, 5_819_079)
    codes = list(AIRLINES)
    share = np.array(AIRLINE_SHARE) / sum(AIRLINE_SHARE)
    a_idx = r.choice(len(codes), n, p=share)
    weights = np.linspace(3.0, 0.6, len(AIRPORTS))
    weights /= weights.sum()
    orig = r.choice(len(AIRPORTS), n, p=weights)
    dest = (orig + r.integers(1, len(AIRPORTS), n)) % len(AIRPORTS)
    lat = np.radians([a[4] for a in AIRPORTS])
    lon = np.radians([a[5] for a in AIRPORTS])
    h = (
        np.sin((lat[dest] - lat[orig]) / 2) ** 2
        + np.cos(lat[orig]) * np.cos(lat[dest]) * np.sin((lon[dest] - lon[orig]) / 2) ** 2
    )
    distance = np.round(2 * 3958.8 * np.arcsin(np.sqrt(h))).astype(int)

    day_of_year = np.sort(r.integers(0, 365, n))
    dates = pd.Timestamp("2015-01-01") + pd.to_timedelta(day_of_year, unit="D")
    sched_dep = np.clip(r.normal(780, 270, n), 300, 1430)  # minutes after midnight
    sched_time = np.round(30 + distance / 7.8 + r.normal(0, 8, n)).clip(20)
    hour = sched_dep / 60
    month = dates.month.to_numpy()
    season = 1.0 + 0.35 * np.isin(month, [6, 7, 12]) - 0.2 * np.isin(month, [9, 10, 11])
    tail_scale = 38 * np.array(AIRLINE_LATENESS)[a_idx] * season * (0.6 + hour / 20)
    delayed = r.random(n) < 0.18 * np.array(AIRLINE_LATENESS)[a_idx] * (0.7 + hour / 30)
    dep_delay = np.where(delayed, r.exponential(tail_scale), r.normal(-4, 5, n)).round()
    taxi_out = r.gamma(4, 4, n).round().clip(1)
    taxi_in = r.gamma(2.5, 3, n).round().clip(1)
    air_time = (sched_time - 28 + r.normal(0, 6, n)).round().clip(15)
    elapsed = taxi_out + air_time + taxi_in
    arr_delay = dep_delay + (elapsed - sched_time)

    cancelled = r.random(n) < 0.015 * season
    diverted = ~cancelled & (r.random(n) < 0.0026)
    dep_time = np.where(cancelled, np.nan, _hhmm(sched_dep + dep_delay))
    wheels_off = np.where(cancelled, np.nan, _hhmm(sched_dep + dep_delay + taxi_out))
    wheels_on = np.where(cancelled | diverted, np.nan, _hhmm(sched_dep + dep_delay + taxi_out + air_time))
    arr_time = np.where(cancelled | diverted, np.nan, _hhmm(sched_dep + dep_delay + elapsed))
    no_arrival = cancelled | diverted
    df = pd.DataFrame(
        {
            "YEAR": 2015,
            "MONTH": month,
            "DAY": dates.day.to_numpy(),
            "DAY_OF_WEEK": dates.dayofweek.to_numpy() + 1,
            "AIRLINE": np.array(codes)[a_idx],
            "FLIGHT_NUMBER": r.integers(1, 7000, n),
            "TAIL_NUMBER": [
                f"N{x}{chr(65 + y)}{chr(65 + z)}"
                for x, y, z in zip(
                    r.integers(100, 999, n), r.integers(0, 26, n), r.integers(0, 26, n), strict=True
                )
            ],
            "ORIGIN_AIRPORT": np.array([a[0] for a in AIRPORTS])[orig],
            "DESTINATION_AIRPORT": np.array([a[0] for a in AIRPORTS])[dest],
            "SCHEDULED_DEPARTURE": _hhmm(sched_dep).astype(int),
            "DEPARTURE_TIME": dep_time,
            "DEPARTURE_DELAY": np.where(cancelled, np.nan, dep_delay),
            "TAXI_OUT": np.where(cancelled, np.nan, taxi_out),
            "WHEELS_OFF": wheels_off,
            "SCHEDULED_TIME": sched_time,
            "ELAPSED_TIME": np.where(no_arrival, np.nan, elapsed),
            "AIR_TIME": np.where(no_arrival, np.nan, air_time),
            "DISTANCE": distance,
            "WHEELS_ON": wheels_on,
            "TAXI_IN": np.where(no_arrival, np.nan, taxi_in),
            "SCHEDULED_ARRIVAL": _hhmm(sched_dep + sched_time).astype(int),
            "ARRIVAL_TIME": arr_time,
            "ARRIVAL_DELAY": np.where(no_arrival, np.nan, arr_delay),
            "DIVERTED": diverted.astype(int),
            "CANCELLED": cancelled.astype(int),
            "CANCELLATION_REASON": np.where(
                cancelled, r.choice(list("ABCD"), n, p=[0.28, 0.54, 0.17, 0.01]), None
            ),
        }
    )
    late = (~no_arrival) & (arr_delay >= 15)
    parts = r.dirichlet([1.0, 0.05, 1.2, 1.4, 0.3], n) * np.where(late, arr_delay, 0)[:, None]
    parts = np.floor(parts)
    parts[:, 3] += np.where(late, arr_delay, 0) - parts.sum(axis=1)
    for i, col in enumerate(DELAY_CAUSES):
        df[col] = np.where(late, parts[:, i], np.nan)
    df.to_csv(out / "flights.csv", index=False)
    pd.DataFrame({"IATA_CODE": codes, "AIRLINE": list(AIRLINES.values())}).to_csv(
        out / "airlines.csv", index=False
    )
    pd.DataFrame(AIRPORTS, columns=["IATA_CODE", "AIRPORT", "CITY", "STATE", "LATITUDE", "LONGITUDE"]).assign(
        COUNTRY="USA"
    )[["IATA_CODE", "AIRPORT", "CITY", "STATE", "COUNTRY", "LATITUDE", "LONGITUDE"]].to_csv(
        out / "airports.csv", index=False
    )
