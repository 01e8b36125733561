"""A small tweet model: sentiment words, topic words, mentions, hashtags, links and noise."""

from __future__ import annotations

import numpy as np

POSITIVE = [
    "love",
    "great",
    "happy",
    "awesome",
    "good",
    "thanks",
    "best",
    "fun",
    "amazing",
    "nice",
    "excited",
    "beautiful",
    "glad",
    "enjoy",
    "wonderful",
    "cool",
    "win",
    "perfect",
    "smile",
    "yay",
    "sweet",
]
NEGATIVE = [
    "hate",
    "sad",
    "bad",
    "tired",
    "sick",
    "worst",
    "miss",
    "sorry",
    "awful",
    "boring",
    "angry",
    "hurt",
    "lost",
    "wrong",
    "ugh",
    "terrible",
    "cry",
    "broken",
    "annoying",
    "fail",
]
NEUTRAL = [
    "today",
    "work",
    "going",
    "time",
    "day",
    "night",
    "home",
    "tomorrow",
    "morning",
    "week",
    "just",
    "now",
    "got",
    "back",
    "school",
    "phone",
    "watching",
    "twitter",
    "new",
    "still",
]
FILLER = [
    "i",
    "you",
    "the",
    "a",
    "to",
    "is",
    "it",
    "and",
    "my",
    "so",
    "for",
    "of",
    "in",
    "on",
    "at",
    "that",
    "this",
    "me",
    "be",
    "with",
]
NEGATORS = ["not", "never", "no", "don't"]


def tweet(r: np.random.Generator, polarity: int, topic: list[str] | None = None) -> str:
    """One tweet; polarity 1 positive, 0 negative, 2 neutral. Some words contradict the label."""
    n = int(r.integers(6, 22))
    bank = POSITIVE if polarity == 1 else NEGATIVE if polarity == 0 else NEUTRAL
    other = NEGATIVE if polarity == 1 else POSITIVE
    words = []
    for _ in range(n):
        u = r.random()
        if u < 0.18:
            words.append(str(r.choice(bank)))
        elif u < 0.22:
            words.append(str(r.choice(other)))
        elif u < 0.25:
            words.append(str(r.choice(NEGATORS)) + " " + str(r.choice(other)))
        elif topic and u < 0.35:
            words.append(str(r.choice(topic)))
        elif u < 0.6:
            words.append(str(r.choice(NEUTRAL)))
        else:
            words.append(str(r.choice(FILLER)))
    if r.random() < 0.3:
        words.insert(0, f"@user{int(r.integers(1, 5000))}")
    if r.random() < 0.15:
        words.append(f"http://t.co/{int(r.integers(1 << 20, 1 << 30)):x}")
    if r.random() < 0.2:
        words.append("#" + str(r.choice(bank + NEUTRAL)))
    if r.random() < 0.25:
        words.append(str(r.choice(["!!", "!", "...", ":)" if polarity == 1 else ":(", "?"])))
    return " ".join(words)
