"""The bundled MSRD sample: sizes, balance, query-disjointness, catalog, and the exact first dev record."""

import shutil
from collections import Counter

import pytest

from hiera_dspy.data import DataError, load_dataset, msrd_sample

ALIEN_TEXT_START = ("Overview: During its return to the earth, commercial spaceship Nostromo intercepts a distress "
                    "signal from a distant planet.")
ALIEN_TEXT_END = ("\nTags: sci-fi, aliens, space, horror, atmospheric, suspense, space travel, ridley scott, tense, "
                  "dark")


@pytest.fixture(scope="module")
def bundled():
    return load_dataset("msrd")


def test_sizes_and_balance(bundled):
    assert bundled.name == "msrd" and bundled.default_split == "dev" and set(bundled.splits) == {"train", "dev", "pool"}
    for split in ("train", "dev"):
        pairs = bundled.split(split)
        assert len(pairs) == 300 and len({p.id for p in pairs}) == 300
        assert Counter(p.label for p in pairs) == {"Relevant": 150, "Irrelevant": 150}


def test_train_and_dev_share_no_query(bundled):
    assert not {p.query_id for p in bundled.split("train")} & {p.query_id for p in bundled.split("dev")}


def test_first_dev_record(bundled):
    first = bundled.split("dev")[0]
    assert (first.id, first.query, first.item_title, first.label, first.query_id, first.item_id) == (
        "msrd:qid:14175:348", "funko pop alien toy story", "Alien", "Relevant", "qid:14175", "348")
    assert first.item_text.startswith(ALIEN_TEXT_START) and first.item_text.endswith(ALIEN_TEXT_END)
    assert len(first.item_text) == 921 and "\nDirector: Ridley Scott\n" in first.item_text


def test_catalog(bundled):
    assert len(bundled.catalog) == 9750 and len({entry.id for entry in bundled.catalog}) == 9750
    alien = next(entry for entry in bundled.catalog if entry.id == "348")
    assert alien.title == "Alien" and alien.text.startswith(ALIEN_TEXT_START) and "Year: 1979" in alien.text


def test_other_folder_and_missing_files(tmp_path):
    shutil.copy(msrd_sample.BUNDLED / "dev.jsonl", tmp_path / "dev.jsonl")
    ds = msrd_sample.load(str(tmp_path), None)
    assert set(ds.splits) == {"dev"} and ds.catalog is None and len(ds.split()) == 300
    with pytest.raises(DataError, match="nowhere: folder not found; expected a folder with train.jsonl"):
        msrd_sample.load(str(tmp_path / "nowhere"), None)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no train.jsonl or dev.jsonl"):
        msrd_sample.load(str(tmp_path / "empty"), None)


def test_licence_of_the_shipped_copy_agrees_in_notice_and_readme():
    """Upstream metarank/msrd states CC BY-SA 4.0; Elastic's notice (kept verbatim) names CC BY 4.0."""
    from pathlib import Path

    notice = (Path(msrd_sample.__file__).parent / "msrd" / "NOTICE.txt").read_text(encoding="utf-8")
    elastic, _, ours = notice.partition("\n\nLicence of this copy:")
    assert elastic.startswith('This product contains an adapted version of the "Movie Search Ranking Dataset (MSRD)"')
    assert "licenses/by/4.0/legalcode" in elastic  # Elastic's words, unchanged
    assert "distributed under CC BY-SA 4.0" in " ".join(ours.split()) and "licenses/by-sa/4.0/legalcode" in ours
    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert "distributed under CC BY-SA 4.0, the licence metarank/msrd states" in readme
