"""`--dataset esci|wands|homedepot` with no path: $HIERA_DATA_DIR/NAME, else (ESCI) the Hugging Face copy through
`datasets`, else one line saying what to download and where."""

import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from hiera_dspy.data import DataError, load_dataset
from tests.data import test_esci, test_homedepot, test_wands

ROOT = Path(__file__).parents[2]


@pytest.fixture
def online(monkeypatch):
    """No local data; the Hugging Face route allowed (tests run with HIERA_OFFLINE=1)."""
    monkeypatch.delenv("HIERA_OFFLINE", raising=False)
    monkeypatch.delenv("HIERA_DATA_DIR", raising=False)


def test_esci_without_a_path_takes_the_hugging_face_route(online, monkeypatch):
    rows, asked = test_esci._hf_rows(), []

    def local_hub(dataset_id, *args, **kwargs):
        asked.append(dataset_id)
        return datasets.DatasetDict({"train": datasets.Dataset.from_pandas(rows, preserve_index=False)})

    monkeypatch.setattr(datasets, "load_dataset", local_hub)
    ds = load_dataset("esci")
    assert asked == ["tasksource/esci"] and ds.name == "esci:hf:tasksource/esci"
    assert len(ds.split("all")) == 40 and ds.split("all")[0].label == "Exact"


def test_esci_offline_is_one_line_naming_what_and_where(online, monkeypatch, tmp_path, caplog):
    def unreachable(dataset_id, *args, **kwargs):
        import logging

        logging.getLogger("huggingface_hub.utils._http").warning("Retrying in 1s [Retry 1/5].")  # silenced
        raise ConnectionError(f"Couldn't reach '{dataset_id}' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    for spec in ("esci", "esci:hf:tasksource/esci"):
        with pytest.raises(DataError) as err:
            load_dataset(spec)
        message = str(err.value)
        assert "\n" not in message and message.startswith("esci: could not load the Hugging Face copy tasksource/esci")
        assert "ConnectionError" in message and "github.com/amazon-science/esci-data" in message
        assert "shopping_queries_dataset_examples.parquet" in message and "$HIERA_DATA_DIR/esci" in message
    assert "Retrying" not in caplog.text  # the hub's retry warnings would bury the line
    monkeypatch.setenv("HIERA_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=f"into {tmp_path}/esci, or pass --dataset esci:PATH$"):
        load_dataset("esci")


@pytest.mark.parametrize("name,files", [("wands", "github.com/wayfair/WANDS (query.csv, product.csv, label.csv)"),
                                        ("homedepot", "home-depot-product-search-relevance")])
def test_without_a_hugging_face_copy_one_line_says_what_and_where(online, name, files):
    with pytest.raises(DataError) as err:
        load_dataset(name)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{name}: HIERA_DATA_DIR is not set; download ")
    assert files in message and f"$HIERA_DATA_DIR/{name}" in message and f"--dataset {name}:PATH" in message


def test_hiera_data_dir_folder_is_read(online, monkeypatch, tmp_path):
    examples, products = test_esci._examples_and_products()
    (tmp_path / "esci").mkdir()
    examples.to_parquet(tmp_path / "esci" / "shopping_queries_dataset_examples.parquet", index=False)
    products.to_parquet(tmp_path / "esci" / "shopping_queries_dataset_products.parquet", index=False)
    for name, write in (("wands", test_wands._write), ("homedepot", test_homedepot._write)):
        (tmp_path / name).mkdir()
        write(tmp_path / name)
    monkeypatch.setenv("HIERA_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("the local folder comes first"))
    for name in ("esci", "wands", "homedepot"):
        ds = load_dataset(name)
        assert ds.name == f"{name}:{tmp_path / name}" and ds.split("all")
    with pytest.raises(DataError, match=f"wands: no {tmp_path}/nowhere/wands folder; download "):
        monkeypatch.setenv("HIERA_DATA_DIR", str(tmp_path / "nowhere"))
        load_dataset("wands")


def test_compile_offline_prints_one_line_and_no_traceback(tmp_path):
    env = {**os.environ, "HIERA_OFFLINE": "1", "HIERA_RUNS_DIR": str(tmp_path)}
    env.pop("HIERA_DATA_DIR", None)
    done = subprocess.run([sys.executable, "-m", "optimize.compile", "--dataset", "esci"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith("error: esci: HIERA_DATA_DIR is not set, and HIERA_OFFLINE=1 skips its Hugging Face "
                               "copy tasksource/esci; download the shopping_queries_dataset/ folder")
