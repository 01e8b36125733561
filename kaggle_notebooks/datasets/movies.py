"""Movies (TMDB 5000 movies and credits) and user ratings (the MovieLens ratings_small file).

tmdb_5000_movies.csv and tmdb_5000_credits.csv hold the JSON-encoded genres, keywords, cast and
crew columns of the public files; overviews are drawn from genre-specific vocabularies so that
content-based similarity finds related films. ratings_small.csv comes from a low-rank taste model.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
from _common import rng, size

FILES = ["tmdb_5000_movies.csv", "tmdb_5000_credits.csv", "ratings_small.csv"]
GENRES = {
    28: "Action",
    12: "Adventure",
    16: "Animation",
    35: "Comedy",
    80: "Crime",
    99: "Documentary",
    18: "Drama",
    10751: "Family",
    14: "Fantasy",
    36: "History",
    27: "Horror",
    10402: "Music",
    9648: "Mystery",
    10749: "Romance",
    878: "Science Fiction",
    53: "Thriller",
    10752: "War",
    37: "Western",
}
GENRE_WORDS = {
    "Action": "mission agent explosion chase soldier weapon escape fight rescue enemy",
    "Adventure": "journey island treasure quest map explorer jungle expedition ancient voyage",
    "Animation": "animated toy creature friends magical kingdom talking adventure colorful young",
    "Comedy": "hilarious wedding roommate awkward prank family vacation misadventure party boss",
    "Crime": "detective murder gang heist police mafia robbery corrupt witness investigation",
    "Documentary": "footage interviews history nature real archive portrait journey climate society",
    "Drama": "family loss struggle relationship father mother daughter grief life dream",
    "Family": "kids dog holiday parents home christmas school friendship brother sister",
    "Fantasy": "wizard dragon magic curse kingdom prophecy sword realm spell creature",
    "History": "war empire king revolution century battle queen historical nation biography",
    "Horror": "haunted demon killer night terror possessed cabin curse blood nightmare",
    "Music": "band singer concert rock dream stage song tour musician talent",
    "Mystery": "secret disappearance clue puzzle strange town truth hidden past investigation",
    "Romance": "love couple wedding heart affair romance passion first meet summer",
    "Science Fiction": "alien planet space future robot galaxy time ship earth technology",
    "Thriller": "conspiracy hostage spy danger threat agent countdown trap survive chase",
    "War": "soldiers battle army front platoon world war general enemy invasion",
    "Western": "sheriff outlaw ranch frontier gunslinger town horse desert bounty gold",
}
FIRST = [
    "James",
    "Mary",
    "John",
    "Emma",
    "Robert",
    "Olivia",
    "Michael",
    "Sophia",
    "David",
    "Isabella",
    "Chris",
    "Anna",
    "Tom",
    "Kate",
    "Will",
    "Natalie",
    "Sam",
    "Julia",
    "Ben",
    "Lucy",
    "Hugh",
    "Nina",
]
LAST = [
    "Smith",
    "Johnson",
    "Brown",
    "Taylor",
    "Anderson",
    "Clark",
    "Lewis",
    "Walker",
    "Hall",
    "Young",
    "King",
    "Wright",
    "Scott",
    "Green",
    "Baker",
    "Adams",
    "Nelson",
    "Carter",
    "Mitchell",
    "Turner",
]
LANGS = ["en", "fr", "es", "de", "ja", "zh", "it", "hi", "ko"]


def _people(r: np.random.Generator, n: int) -> list[str]:
    return sorted(
        {
            f"{FIRST[a]} {LAST[b]}"
            for a, b in zip(r.integers(0, len(FIRST), n * 3), r.integers(0, len(LAST), n * 3), strict=True)
        }
    )[:n]


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("movies", seed)
    n = size(scale, 600, 4_803, 20_000)
    genre_ids = list(GENRES)
    actors, directors = _people(r, 300), _people(r, 120)
    ids = np.sort(r.choice(np.arange(5, 450_000), n, replace=False))
    rows, credits = [], []
    for i, mid in enumerate(ids):
        g = list(dict.fromkeys(r.choice(genre_ids, r.integers(1, 4), replace=False).tolist()))
        words = " ".join(GENRE_WORDS[GENRES[x]] for x in g).split()
        overview = " ".join(r.choice(words, r.integers(15, 40))).capitalize() + "."
        keywords = [
            {"id": int(1000 + zlib.crc32(w.encode()) % 90000), "name": w}
            for w in dict.fromkeys(r.choice(words, 5))
        ]
        title = " ".join(w.capitalize() for w in r.choice(words, r.integers(1, 4))) + (
            "" if i % 7 else f" {i}"
        )
        quality = r.normal(6.2, 0.9)
        budget = int(np.exp(r.normal(16.5, 1.3))) if r.random() > 0.2 else 0
        votes = int(np.exp(r.normal(5.5, 1.6)))
        date = pd.Timestamp("1950-01-01") + pd.Timedelta(days=int(r.beta(5, 1.6) * 24_000))
        rows.append(
            {
                "budget": budget,
                "genres": json.dumps([{"id": x, "name": GENRES[x]} for x in g]),
                "homepage": f"http://www.movie{mid}.example/" if r.random() < 0.35 else None,
                "id": int(mid),
                "keywords": json.dumps(keywords),
                "original_language": r.choice(LANGS, p=[0.9] + [0.0125] * 8),
                "original_title": title,
                "overview": overview,
                "popularity": round(float(votes**0.5 * r.gamma(2, 0.3)), 6),
                "production_companies": json.dumps(
                    [{"name": f"{LAST[r.integers(len(LAST))]} Pictures", "id": int(r.integers(1, 9999))}]
                ),
                "production_countries": json.dumps(
                    [{"iso_3166_1": "US", "name": "United States of America"}]
                ),
                "release_date": date.strftime("%Y-%m-%d"),
                "revenue": int(budget * r.lognormal(0.6, 0.9)) if budget else 0,
                "runtime": float(max(60, round(r.normal(107, 20)))),
                "spoken_languages": json.dumps([{"iso_639_1": "en", "name": "English"}]),
                "status": "Released",
                "tagline": None if r.random() < 0.2 else f"The {words[0]} begins.",
                "title": title,
                "vote_average": round(float(np.clip(quality, 0, 10)), 1),
                "vote_count": votes,
            }
        )
        cast = [
            {
                "cast_id": k,
                "character": f"{w.capitalize()}",
                "credit_id": f"{mid:x}{k:04x}",
                "gender": int(r.integers(0, 3)),
                "id": int(r.integers(1, 2_000_000)),
                "name": actors[a],
                "order": k,
            }
            for k, (a, w) in enumerate(
                zip(r.choice(len(actors), 8, replace=False), r.choice(words, 8), strict=True)
            )
        ]
        crew = [
            {
                "credit_id": f"{mid:x}d",
                "department": "Directing",
                "gender": int(r.integers(0, 3)),
                "id": int(r.integers(1, 2_000_000)),
                "job": "Director",
                "name": directors[r.integers(len(directors))],
            },
            {
                "credit_id": f"{mid:x}p",
                "department": "Production",
                "gender": 0,
                "id": int(r.integers(1, 2_000_000)),
                "job": "Producer",
                "name": _people(r, 1)[0],
            },
        ]
        credits.append(
            {"movie_id": int(mid), "title": title, "cast": json.dumps(cast), "crew": json.dumps(crew)}
        )
    pd.DataFrame(rows).to_csv(out / "tmdb_5000_movies.csv", index=False)
    pd.DataFrame(credits).to_csv(out / "tmdb_5000_credits.csv", index=False)
    _ratings(r, scale).to_csv(out / "ratings_small.csv", index=False)


def _ratings(r: np.random.Generator, scale: str) -> pd.DataFrame:
    users = size(scale, 150, 671, 6_000)
    items = size(scale, 1_200, 9_066, 40_000)
    total = size(scale, 8_000, 100_004, 1_000_000)
    k = 5
    pu, qi = r.normal(0, 0.5, (users, k)), r.normal(0, 0.5, (items, k))
    bu, bi = r.normal(0, 0.35, users), r.normal(0, 0.45, items)
    u = r.choice(users, total, p=_zipf(users, 0.8, r))
    i = r.choice(items, total, p=_zipf(items, 1.0, r))
    pairs = pd.DataFrame({"u": u, "i": i}).drop_duplicates()
    u, i = pairs["u"].to_numpy(), pairs["i"].to_numpy()
    score = 3.54 + bu[u] + bi[i] + (pu[u] * qi[i]).sum(axis=1) + r.normal(0, 0.6, len(u))
    rating = np.clip(np.round(score * 2) / 2, 0.5, 5.0)
    movie_ids = np.sort(r.choice(np.arange(1, 165_000), items, replace=False))
    ts = r.integers(828_000_000, 1_476_000_000, len(u))
    return (
        pd.DataFrame({"userId": u + 1, "movieId": movie_ids[i], "rating": rating, "timestamp": ts})
        .sort_values(["userId", "movieId"])
        .reset_index(drop=True)
    )


def _zipf(n: int, a: float, r: np.random.Generator) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** a
    w = w[r.permutation(n)]
    return w / w.sum()
