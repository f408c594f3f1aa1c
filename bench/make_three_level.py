"""Build a small 3-level relevance set in the Home Depot format from the bundled MSRD sample (issue 15's 3-level check).

    python -m bench.make_three_level                       # writes bench/data/three_level/{train,eval}/
    python -m bench.make_three_level --per-level 20 --out /tmp/three_level

Levels (relevance 1-3, as Home Depot's mean ratings):
- 3: an MSRD pair labelled relevant;
- 2: for such a pair's query, a different catalog movie by the relevant movie's director that shares at least one genre
  with it, has no title word (3+ letters) in common with the query and is not labelled for that query in the sample
  (a sibling of what was asked for: related, not it). CONSTRUCTED by this rule, not judged by a person;
- 1: an MSRD pair labelled irrelevant.
Each half draws --per-level pairs per level (seed 42): `train/` from MSRD's train split, `eval/` from its dev split, so
the halves share no query. Each half is a Home Depot-format folder that `--dataset homedepot:FOLDER --split all` reads:
train.csv (latin-1: id, product_uid, product_title, search_term, relevance) and product_descriptions.csv (product_uid,
product_description: the movie's overview, year, genres, director, actors, characters, tags). Characters outside
latin-1 are transliterated where Unicode allows and replaced by "?" otherwise. MSRD is CC BY-SA 4.0: so is this set
(NOTICE.txt is written beside it).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import re
import shutil
import unicodedata
from pathlib import Path

from hiera_dspy.data.msrd_sample import BUNDLED, _movie_text

PUNCTUATION = str.maketrans({"\u2014": "-", "\u2013": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"',
                             "\u201d": '"', "\u2026": "...", "\u2212": "-"})
HALVES = {"train": ("train.jsonl", 1), "eval": ("dev.jsonl", 1001)}  # MSRD split, first row id


def latin1(text: str) -> str:
    """`text` with every character encodable as latin-1 (transliterated when possible, else "?")."""
    out = []
    for ch in str(text).translate(PUNCTUATION):
        try:
            ch.encode("latin-1")
            out.append(ch)
        except UnicodeEncodeError:
            plain = unicodedata.normalize("NFKD", ch).encode("latin-1", "ignore").decode("latin-1")
            out.append(plain if plain.strip() else "?")
    return "".join(out)


def words(text: str) -> set[str]:
    """Lower-cased words of 3+ letters or digits."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3}


def sibling(pair: dict, movie: dict, catalog: list[dict], labelled: set[str], rng: random.Random) -> dict | None:
    """The middle level's movie for a relevant pair (see the module doc), drawn with `rng`; None when none exists."""
    director, genres = movie.get("director"), set(movie.get("genres") or [])
    if not director:
        return None
    query = words(pair["query"])
    options = [m for m in catalog if m.get("director") == director and m["id"] != movie["id"]
               and m["id"] not in labelled and genres & set(m.get("genres") or []) and not query & words(m["title"])]
    return rng.choice(options) if options else None


def build_half(rows: list[dict], catalog: list[dict], per_level: int, rng: random.Random) -> list[tuple[dict, int]]:
    """(movie-with-query, relevance) triples for one half: per_level pairs of each level, shuffled."""
    by_id = {m["id"]: m for m in catalog}
    labelled: dict[str, set[str]] = {}
    for r in rows:
        labelled.setdefault(r["query_id"], set()).add(r["item_id"])
    relevant = sorted((r for r in rows if r["label"] == 1 and r["item_id"] in by_id), key=lambda r: r["id"])
    irrelevant = sorted((r for r in rows if r["label"] == 0 and r["item_id"] in by_id), key=lambda r: r["id"])
    rng.shuffle(relevant)
    top, middle = [], []
    for r in relevant:
        other = sibling(r, by_id[r["item_id"]], catalog, labelled[r["query_id"]], rng)
        if other is not None:
            top.append((r["query"], by_id[r["item_id"]], 3))
            middle.append((r["query"], other, 2))
        if len(top) == per_level:
            break
    bottom = [(r["query"], by_id[r["item_id"]], 1) for r in rng.sample(irrelevant, min(per_level, len(irrelevant)))]
    n = min(len(top), len(middle), len(bottom))
    chosen = top[:n] + middle[:n] + bottom[:n]
    rng.shuffle(chosen)
    return chosen


def write_half(folder: Path, chosen, first_id: int) -> None:
    """train.csv (latin-1) and product_descriptions.csv of one half."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "train.csv", "w", encoding="latin-1", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["id", "product_uid", "product_title", "search_term", "relevance"])
        for i, (query, movie, level) in enumerate(chosen):
            out.writerow([first_id + i, movie["id"], latin1(movie["title"]), latin1(query), level])
    movies = {movie["id"]: movie for _, movie, _ in chosen}
    with open(folder / "product_descriptions.csv", "w", encoding="latin-1", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["product_uid", "product_description"])
        for uid in sorted(movies, key=int):
            out.writerow([uid, latin1(_movie_text(movies[uid]).replace("\n", " | "))])


def main(argv: list[str] | None = None) -> dict[str, int]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="bench/data/three_level", help="output folder (train/ and eval/ inside)")
    p.add_argument("--per-level", type=int, default=50, help="pairs per level in each half (default 50: 150 a half)")
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    with gzip.open(BUNDLED / "movies-corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        catalog = [json.loads(line) for line in fh]
    for movie in catalog:
        movie["id"] = str(movie["id"])
    out, sizes, queries = Path(args.out), {}, {}
    for half, (source, first_id) in HALVES.items():
        rows = [json.loads(line) for line in (BUNDLED / source).read_text(encoding="utf-8").splitlines() if line]
        chosen = build_half(rows, catalog, args.per_level, random.Random(args.seed))
        write_half(out / half, chosen, first_id)
        sizes[half] = len(chosen)
        queries[half] = {latin1(q).strip().lower() for q, _, _ in chosen}
    if queries["train"] & queries["eval"]:
        raise SystemExit(f"error: train and eval share queries {sorted(queries['train'] & queries['eval'])[:3]}")
    shutil.copyfile(BUNDLED / "NOTICE.txt", out / "NOTICE.txt")
    with open(out / "NOTICE.txt", "a", encoding="utf-8") as fh:
        fh.write("\nThis 3-level set (bench/make_three_level.py) is a further adaptation of that sample: its level-2 "
                 "pairs are constructed by a rule (same director, shared genre, no title word in the query), not "
                 "judged by a person. It is distributed under CC BY-SA 4.0.\n")
    print(f"wrote {out}/train ({sizes['train']} pairs) and {out}/eval ({sizes['eval']} pairs), "
          f"{args.per_level} per level at most, seed {args.seed}")
    return sizes


if __name__ == "__main__":
    main()
