"""Where a dataset named without a path lives (`--dataset esci`, `wands`, `homedepot`).

`$HIERA_DATA_DIR/NAME` when that folder exists; else the dataset's Hugging Face copy through `datasets`, for a
dataset that has one (ESCI: `tasksource/esci`; skipped when HIERA_OFFLINE=1); else a `DataError` whose one line says
what to download and where to put it. Each loader declares its `Download`.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hiera_dspy import settings
from hiera_dspy.data import DataError

DATA_DIR_ENV = "HIERA_DATA_DIR"  # read by hiera_dspy.settings.data_dir
QUIET_LOGGERS = ("huggingface_hub", "datasets", "fsspec")  # their retry warnings would bury the one line


@dataclass(frozen=True)
class Download:
    """What a user fetches for dataset `name`: `files` (from where, which files) and an optional Hugging Face copy."""

    name: str
    files: str
    hf_id: str | None = None

    def missing(self, why: str) -> DataError:
        """The one-line error: why there is no data, what to download, where to put it."""
        here = settings.data_dir()
        where = f"{here}/{self.name}" if here else f"${DATA_DIR_ENV}/{self.name} (set {DATA_DIR_ENV} to any folder)"
        return DataError(f"{self.name}: {why}; download {self.files} into {where}, or pass --dataset {self.name}:PATH")


def local_folder(download: Download) -> Path | None:
    """`$HIERA_DATA_DIR/NAME` if the variable is set and the folder exists."""
    root = settings.data_dir()
    folder = Path(root) / download.name if root else None
    return folder if folder is not None and folder.is_dir() else None


def locate(download: Download) -> str:
    """The loader argument for a dataset named without a path: a folder, or `hf:ID`; else DataError (one line)."""
    folder = local_folder(download)
    if folder is not None:
        return str(folder)
    here = settings.data_dir()
    no_local = f"no {here}/{download.name} folder" if here else f"{DATA_DIR_ENV} is not set"
    if download.hf_id is None:
        raise download.missing(no_local)
    if settings.offline():
        raise download.missing(f"{no_local}, and HIERA_OFFLINE=1 skips its Hugging Face copy {download.hf_id}")
    return f"hf:{download.hf_id}"


def hf_load(download: Download, dataset_id: str):
    """`datasets.load_dataset(dataset_id)`; any failure (offline, unknown id) becomes the one-line DataError."""
    import datasets

    try:
        with _quiet():
            return datasets.load_dataset(dataset_id)
    except Exception as exc:  # noqa: BLE001 - the hub raises many types (ConnectionError, HTTP, not found)
        reason = " ".join(str(exc).split())[:160]
        raise download.missing(f"could not load the Hugging Face copy {dataset_id} ({type(exc).__name__}: "
                               f"{reason})") from None


@contextmanager
def _quiet():
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
