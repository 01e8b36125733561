"""Google Play Store apps: googleplaystore.csv and googleplaystore_user_reviews.csv.

The published study read the 2021 crawl, ``Google-Playstore.csv`` (2.3 M apps, other columns and
no reviews). Placed in ``real/apps/``, :func:`adapt` converts it to the columns the notebook reads
(``App Name`` -> ``App``, ``Rating Count`` -> ``Reviews``, ``Free`` -> ``Type``, ``Minimum
Android`` -> ``Android Ver``, dates to the 2018 format) and generates user reviews for 1,074 of
its apps (as many as the 2018 file covers): the data set is then ``mixed``.

Strings are formatted as in the scraped public files ("10,000+", "19M", "Varies with device",
"$4.99", "January 7, 2018"), a few rows are duplicated and some ratings are missing, so the
usual cleaning steps have real work to do.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import rng, size

FILES = ["googleplaystore.csv", "googleplaystore_user_reviews.csv"]
CATEGORIES = {  # category: (share, genre names)
    "FAMILY": (0.18, ["Education", "Entertainment", "Casual", "Puzzle;Brain Games", "Simulation"]),
    "GAME": (0.11, ["Action", "Arcade", "Racing", "Casual", "Strategy"]),
    "TOOLS": (0.08, ["Tools"]),
    "MEDICAL": (0.04, ["Medical"]),
    "BUSINESS": (0.04, ["Business"]),
    "PRODUCTIVITY": (0.04, ["Productivity"]),
    "PERSONALIZATION": (0.036, ["Personalization"]),
    "COMMUNICATION": (0.036, ["Communication"]),
    "SPORTS": (0.035, ["Sports"]),
    "LIFESTYLE": (0.035, ["Lifestyle"]),
    "FINANCE": (0.034, ["Finance"]),
    "HEALTH_AND_FITNESS": (0.031, ["Health & Fitness"]),
    "PHOTOGRAPHY": (0.031, ["Photography"]),
    "SOCIAL": (0.027, ["Social"]),
    "NEWS_AND_MAGAZINES": (0.026, ["News & Magazines"]),
    "SHOPPING": (0.024, ["Shopping"]),
    "TRAVEL_AND_LOCAL": (0.024, ["Travel & Local"]),
    "DATING": (0.022, ["Dating"]),
    "BOOKS_AND_REFERENCE": (0.021, ["Books & Reference"]),
    "VIDEO_PLAYERS": (0.016, ["Video Players & Editors"]),
    "EDUCATION": (0.014, ["Education"]),
    "ENTERTAINMENT": (0.014, ["Entertainment"]),
    "MAPS_AND_NAVIGATION": (0.013, ["Maps & Navigation"]),
    "FOOD_AND_DRINK": (0.012, ["Food & Drink"]),
    "HOUSE_AND_HOME": (0.008, ["House & Home"]),
    "AUTO_AND_VEHICLES": (0.008, ["Auto & Vehicles"]),
    "WEATHER": (0.008, ["Weather"]),
    "ART_AND_DESIGN": (0.006, ["Art & Design", "Art & Design;Creativity"]),
    "EVENTS": (0.006, ["Events"]),
    "COMICS": (0.006, ["Comics"]),
    "PARENTING": (0.006, ["Parenting"]),
    "BEAUTY": (0.005, ["Beauty"]),
    "LIBRARIES_AND_DEMO": (0.008, ["Libraries & Demo"]),
}
INSTALLS = [
    0,
    1,
    5,
    10,
    50,
    100,
    500,
    1_000,
    5_000,
    10_000,
    50_000,
    100_000,
    500_000,
    1_000_000,
    5_000_000,
    10_000_000,
    50_000_000,
    100_000_000,
    500_000_000,
    1_000_000_000,
]
CONTENT = ["Everyone", "Teen", "Everyone 10+", "Mature 17+", "Adults only 18+", "Unrated"]
ANDROID = [
    "4.1 and up",
    "4.0.3 and up",
    "4.0 and up",
    "Varies with device",
    "4.4 and up",
    "2.3 and up",
    "5.0 and up",
    "4.2 and up",
    "2.3.3 and up",
    "3.0 and up",
]
WORDS_APP = [
    "Photo",
    "Editor",
    "Smart",
    "Pro",
    "Lite",
    "Free",
    "Super",
    "Daily",
    "Easy",
    "Magic",
    "Quick",
    "My",
    "Pocket",
    "Live",
    "Go",
    "Plus",
    "World",
    "Master",
    "Simple",
    "Cloud",
]
REVIEW_POS = ["great", "love", "awesome", "easy", "useful", "best", "nice", "perfect", "helpful", "amazing"]
REVIEW_NEG = ["bad", "crash", "slow", "ads", "annoying", "worst", "useless", "bug", "broken", "waste"]
REVIEW_NEU = ["app", "update", "version", "phone", "use", "time", "work", "option", "screen", "need"]


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("apps", seed)
    n = size(scale, 1_500, 10_841, 60_000)
    cats = list(CATEGORIES)
    share = np.array([CATEGORIES[c][0] for c in cats])
    cat = r.choice(len(cats), n, p=share / share.sum())
    popularity = r.normal(0, 1, n)
    inst_idx = np.clip(np.round(11 + 3.2 * popularity), 0, len(INSTALLS) - 1).astype(int)
    installs = np.array(INSTALLS)[inst_idx]
    reviews = np.floor(installs * r.beta(1.2, 40, n)).astype(np.int64)
    paid = r.random(n) < 0.074
    rating = np.clip(r.normal(4.2 + 0.05 * popularity, 0.45, n), 1, 5).round(1)
    rating = np.where((reviews == 0) | (r.random(n) < 0.1), np.nan, rating)
    size_mb = r.lognormal(2.6, 1.0, n)
    size_str = np.where(
        r.random(n) < 0.15,
        "Varies with device",
        np.where(
            size_mb < 1,
            [f"{x * 1024:.0f}k" for x in size_mb],
            [f"{x:.1f}M".replace(".0M", "M") for x in size_mb],
        ),
    )
    prices = np.where(
        paid,
        r.choice(
            [0.99, 1.49, 1.99, 2.99, 3.99, 4.99, 6.99, 9.99, 14.99, 399.99],
            n,
            p=[0.2, 0.05, 0.13, 0.2, 0.1, 0.15, 0.07, 0.06, 0.035, 0.005],
        ),
        0.0,
    )
    updated = pd.Timestamp("2018-08-08") - pd.to_timedelta((r.exponential(300, n)).astype(int), unit="D")
    names = [
        f"{WORDS_APP[a]} {WORDS_APP[b]} {cats[c].split('_')[0].title()}" + (f" {i}" if i % 3 else "")
        for i, (a, b, c) in enumerate(zip(r.integers(0, 20, n), r.integers(0, 20, n), cat, strict=True))
    ]
    df = pd.DataFrame(
        {
            "App": names,
            "Category": np.array(cats)[cat],
            "Rating": rating,
            "Reviews": reviews.astype(str),
            "Size": size_str,
            "Installs": [f"{x:,}+" if x else "0" for x in installs],
            "Type": np.where(paid, "Paid", "Free"),
            "Price": [f"${p:.2f}" if p else "0" for p in prices],
            "Content Rating": r.choice(CONTENT, n, p=[0.80, 0.11, 0.04, 0.046, 0.002, 0.002]),
            "Genres": [r.choice(CATEGORIES[cats[c]][1]) for c in cat],
            "Last Updated": [d.strftime("%B %-d, %Y") for d in updated],
            "Current Ver": [
                f"{a}.{b}.{c}" if r.random() > 0.13 else "Varies with device"
                for a, b, c in zip(
                    r.integers(1, 9, n), r.integers(0, 20, n), r.integers(0, 10, n), strict=True
                )
            ],
            "Android Ver": r.choice(ANDROID, n),
        }
    )
    dups = df.sample(frac=0.045, random_state=int(r.integers(1 << 30)))
    df = pd.concat([df, dups]).sort_index(kind="stable").reset_index(drop=True)
    df.to_csv(out / "googleplaystore.csv", index=False)
    _reviews(r, df, n).to_csv(out / "googleplaystore_user_reviews.csv", index=False)


#: the real file :func:`adapt` converts, and how many of its apps get generated reviews
REAL_ALTERNATIVE = ["Google-Playstore.csv"]
ADAPTED_REVIEWED_APPS = 1_074


def adapt(real: Path, out: Path, seed: int) -> None:
    """The notebook's two files from the study's ``Google-Playstore.csv`` (real apps, generated reviews)."""
    src = pd.read_csv(real / "Google-Playstore.csv", low_memory=False)
    free = src["Free"].astype(str).str.lower().isin(["true", "1"])
    price = pd.to_numeric(src["Price"], errors="coerce").fillna(0.0)
    updated = pd.to_datetime(src["Last Updated"], format="%b %d, %Y", errors="coerce")
    reviews = pd.to_numeric(src["Rating Count"], errors="coerce")
    df = pd.DataFrame(
        {
            "App": src["App Name"],
            "Category": src["Category"],
            "Rating": pd.to_numeric(src["Rating"], errors="coerce"),
            "Reviews": reviews.map(lambda x: "" if pd.isna(x) else str(int(x))),
            "Size": src["Size"].astype(str).str.replace(",", "", regex=False),
            "Installs": src["Installs"].astype(str),
            "Type": np.where(free, "Free", "Paid"),
            "Price": [f"${p:.2f}" if p else "0" for p in price],
            "Content Rating": src["Content Rating"],
            "Genres": src["Category"],
            "Last Updated": [d.strftime("%B %-d, %Y") if pd.notna(d) else "" for d in updated],
            "Current Ver": "Varies with device",
            "Android Ver": src["Minimum Android"],
        }
    )
    df = df[updated.notna().to_numpy()]
    df.to_csv(out / "googleplaystore.csv", index=False)
    r = rng("apps", seed)
    _reviews(r, df, len(df), max_apps=ADAPTED_REVIEWED_APPS).to_csv(
        out / "googleplaystore_user_reviews.csv", index=False
    )


def _reviews(r: np.random.Generator, apps: pd.DataFrame, n: int, max_apps: int | None = None) -> pd.DataFrame:
    names = apps["App"].drop_duplicates()
    count = round(len(names) * 0.1) if max_apps is None else min(max_apps, len(names))
    reviewed = names.sample(n=count, random_state=int(r.integers(1 << 30)))
    rows = []
    for app in reviewed:
        for _ in range(int(r.integers(5, 40))):
            polarity = float(np.clip(r.normal(0.2, 0.35), -1, 1))
            if r.random() < 0.05:
                rows.append((app, None, None, None, None))
                continue
            bank = REVIEW_POS if polarity > 0.1 else REVIEW_NEG if polarity < -0.05 else REVIEW_NEU
            text = " ".join(r.choice(bank + REVIEW_NEU, int(r.integers(4, 20)))).capitalize()
            label = "Positive" if polarity > 0.05 else "Negative" if polarity < -0.05 else "Neutral"
            rows.append((app, text, label, round(polarity, 6), round(float(r.beta(2, 2)), 6)))
    return pd.DataFrame(
        rows,
        columns=["App", "Translated_Review", "Sentiment", "Sentiment_Polarity", "Sentiment_Subjectivity"],
    )
