"""First GOP debate Twitter sentiment: Sentiment.csv (the CrowdFlower set's 21 columns).

Sentiment Negative ~61%, Neutral ~23%, Positive ~16%; texts mention candidates and topics.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import rng, size
from _text import tweet

FILES = ["Sentiment.csv"]
CANDIDATES = [
    "No candidate mentioned",
    "Donald Trump",
    "Jeb Bush",
    "Ted Cruz",
    "Ben Carson",
    "Mike Huckabee",
    "Chris Christie",
    "Marco Rubio",
    "Rand Paul",
    "Scott Walker",
    "John Kasich",
]
SUBJECTS = [
    "None of the above",
    "FOX News or Moderators",
    "Religion",
    "Foreign Policy",
    "Women's Issues",
    "Racial issues",
    "Immigration",
    "Jobs and Economy",
    "Gun Control",
    "Abortion",
    "LGBT issues",
    "Healthcare (including Medicaid)",
]
TOPIC = [
    "debate",
    "gop",
    "trump",
    "fox",
    "moderators",
    "candidates",
    "republican",
    "vote",
    "policy",
    "immigration",
    "economy",
]


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("gop_tweets", seed)
    n = size(scale, 2_000, 13_871, 100_000)
    sent = r.choice(["Negative", "Neutral", "Positive"], n, p=[0.61, 0.23, 0.16])
    pol = np.where(sent == "Positive", 1, np.where(sent == "Negative", 0, 2))
    cand = r.choice(len(CANDIDATES), n, p=np.array([30, 19, 8, 6, 6, 4, 4, 5, 4, 3, 3]) / 92)
    created = pd.Timestamp("2015-08-06 19:00:00") + pd.to_timedelta(
        np.sort(r.integers(0, 3 * 86_400, n)), unit="s"
    )
    texts = []
    for p, c in zip(pol, cand, strict=True):
        who = CANDIDATES[c].split()[-1]
        texts.append(
            "RT @gopdebate: " * int(r.random() < 0.4) + tweet(r, int(p), [*TOPIC, who, "#GOPDebate"])
        )
    df = pd.DataFrame(
        {
            "id": np.arange(1, n + 1),
            "candidate": np.array(CANDIDATES)[cand],
            "candidate_confidence": np.round(r.choice([1.0, 0.6578, 0.7, 0.4]), 4),
            "relevant_yn": "yes",
            "relevant_yn_confidence": 1.0,
            "sentiment": sent,
            "sentiment_confidence": r.uniform(0.3, 1.0, n).round(4),
            "subject_matter": r.choice(SUBJECTS, n),
            "subject_matter_confidence": r.uniform(0.3, 1.0, n).round(4),
            "candidate_gold": None,
            "name": [f"tweeter{int(u)}" for u in r.integers(1, n, n)],
            "relevant_yn_gold": None,
            "retweet_count": r.geometric(0.3, n) - 1,
            "sentiment_gold": None,
            "subject_matter_gold": None,
            "text": texts,
            "tweet_coord": None,
            "tweet_created": [d.strftime("%Y-%m-%d %H:%M:%S -0700") for d in created],
            "tweet_id": 629_697_200_650_592_256 + np.arange(n) * 131,
            "tweet_location": None,
            "user_timezone": r.choice(
                [
                    "Eastern Time (US & Canada)",
                    "Central Time (US & Canada)",
                    "Pacific Time (US & Canada)",
                    None,
                ],
                n,
            ),
        }
    )
    df.to_csv(out / FILES[0], index=False)
