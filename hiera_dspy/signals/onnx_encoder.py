"""The fine-tuned cross-encoder through ONNX Runtime: exported from torch, its BERT graph fused, its weights quantized
to int8 where that keeps the labels, and run by an `InferenceSession` that returns the head's raw logits matrix
(n, num_labels) for whatever head the model has (one logit for two labels, K-1 cumulative logits for K grades).

`accelerate(encoder, check)` exports the encoder's torch model into a temporary folder (`model.onnx`, fp32, BERT
attention/LayerNorm/GELU fused by onnxruntime's transformer optimizer), quantizes it dynamically
(`onnxruntime.quantization.quantize_dynamic`, int8 weights, `model.int8.onnx`), scores the `check` triples with torch,
ONNX fp32 and ONNX int8, and keeps int8 only if its labels (the number of logits above 0: the label for one logit and
for cumulative logits alike) agree with torch's on at least `INT8_MIN_AGREEMENT` of them; with no check pairs int8 is
not used. The choice and its evidence go into `onnx.json`, written beside the weights with the ONNX files, all recorded
by SHA-256 in the artifact like the safetensors (`CrossEncoder.save` / `load`).

Without onnxruntime the torch model scores, with a note on stderr saying so and how to install it.

Example:
    >>> runner = OnnxRunner("ce.weights/model.int8.onnx")        # doctest: +SKIP
    >>> runner.logits({"input_ids": ids, "attention_mask": mask, "token_type_ids": types}).shape   # doctest: +SKIP
    (64, 1)
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hiera_dspy.errors import HieraError

MANIFEST = "onnx.json"
FP32, INT8 = "model.onnx", "model.int8.onnx"
INT8_MIN_AGREEMENT = 0.995  # <= 1 flipped label in 200: a balanced set's kappa moves by <= 0.01
OPSET = 17
FP32_CHECK = 32  # check pairs scored by the fp32 export (it equals torch to ~1e-6)
INSTALL_HINT = "pip install onnxruntime onnx (the signals extra has them)"


def available() -> bool:
    """Whether onnxruntime and onnx import here (the signals extra installs both)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def torch_fallback_note(reason: str) -> None:
    """Say once per call site that scoring runs on torch, why, and how to get the fast path."""
    print(f"cross-encoder: scoring with torch, not ONNX Runtime ({reason}; {INSTALL_HINT}: ~2-5x faster here)",
          file=sys.stderr)


class OnnxRunner:
    """An ONNX Runtime session of an exported sequence-classification model: `logits(feeds)` is its (n, num_labels)
    output. `threads`: intra-op threads (default: onnxruntime's, one per physical core).

    `one_text_a_run`: for a dynamically quantized (int8) model, whose activations are scaled by one factor per tensor
    of a run, so that a text run beside others (and beside their padding) gets outputs that depend on them and a
    judgment could change with what else is judged. Each row of a batch then runs alone, cut to its own tokens
    (`attention_mask`), and token outputs are padded back with zeros: the same numbers as the text judged alone."""

    def __init__(self, path: str | Path, threads: int | None = None, one_text_a_run: bool = False):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = int(threads)
        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.one_text_a_run = bool(one_text_a_run)

    def output(self, feeds: Mapping[str, Any]) -> np.ndarray:
        """The model's first output for one padded batch, as float64 (`feeds`: the tokenizer's arrays by input name;
        extra names are ignored)."""
        inputs = {name: np.asarray(feeds[name], dtype=np.int64) for name in self.input_names}
        if not self.one_text_a_run:
            return self._run(inputs)
        width = inputs["input_ids"].shape[1]
        lengths = np.asarray(feeds["attention_mask"]).sum(axis=1) if "attention_mask" in feeds else [width] * len(
            inputs["input_ids"])
        rows = []
        for i, n in enumerate(lengths):
            out = self._run({name: v[i:i + 1, :int(n)] for name, v in inputs.items()})
            if out.ndim == 3:  # token outputs: back to the batch's width, zeros where the padding was
                out = np.pad(out, ((0, 0), (0, width - out.shape[1]), (0, 0)))
            rows.append(out)
        return np.concatenate(rows)

    def _run(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(self.session.run(None, inputs)[0], dtype=np.float64)

    def logits(self, feeds: Mapping[str, Any]) -> np.ndarray:
        """The logits of one padded batch: `output` as an (n, num_labels) matrix."""
        out = self.output(feeds)
        return out.reshape(len(out), -1)


def export(model, input_names: Sequence[str], folder: Path) -> dict[str, Path]:
    """Export `model` (a transformers sequence-classification model) to `folder`: {"fp32": model.onnx, "int8":
    model.int8.onnx}; batch and sequence axes dynamic; the BERT graph fused when onnxruntime's optimizer knows it."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder.mkdir(parents=True, exist_ok=True)
    names = list(input_names)
    wrapper = _logits_only(model, names).eval()
    dummy = tuple(torch.ones((2, 8), dtype=torch.long) if n != "token_type_ids" else torch.zeros((2, 8),
                  dtype=torch.long) for n in names)
    raw = folder / "model.raw.onnx"
    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {"logits": {0: "batch"}}
    with torch.no_grad():
        torch.onnx.export(wrapper, dummy, str(raw), input_names=names, output_names=["logits"], dynamic_axes=axes,
                          opset_version=OPSET, dynamo=False)
    fp32 = folder / FP32
    _fuse(raw, fp32, model.config)
    raw.unlink()
    int8 = folder / INT8
    import onnx

    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,  # a scale per column
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # the fused ops' outputs: fp32
    return {"fp32": fp32, "int8": int8}


def _logits_only(model, names: Sequence[str]):
    """A torch module calling `model` with positional inputs (in `names` order) and returning only its logits: what
    the exporter traces."""
    import torch

    class LogitsOnly(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            return self.model(**dict(zip(names, inputs))).logits

    return LogitsOnly()


def _fuse(src: Path, dst: Path, config) -> None:
    """onnxruntime's BERT fusions (attention, LayerNorm, GELU) into `dst`; a plain copy when the graph is not BERT's."""
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        fused = optimize_model(str(src), model_type="bert", num_heads=int(getattr(config, "num_attention_heads", 0)),
                               hidden_size=int(getattr(config, "hidden_size", 0)))
        fused.save_model_to_file(str(dst))
    except Exception as exc:  # noqa: BLE001 - the unfused graph computes the same logits, only slower
        print(f"cross-encoder: ONNX graph not fused ({type(exc).__name__}: {exc}); using it unfused", file=sys.stderr)
        shutil.copyfile(src, dst)


def ordinal_labels(logits: np.ndarray) -> np.ndarray:
    """The label index of each row of logits: the number of logits above 0 (one logit: 1 = the top label; K-1
    cumulative logits: the grade)."""
    return (np.asarray(logits) > 0).sum(axis=1)


def agreement(reference: np.ndarray, other: np.ndarray) -> dict[str, float]:
    """How far `other`'s logits are from `reference`'s: the share of equal labels and the largest and mean change of
    the sigmoid of each logit."""
    ref, oth = np.asarray(reference, dtype=float), np.asarray(other, dtype=float)
    if len(ref) == 0:
        return {"pairs": 0, "label_agreement": None, "max_abs_dp": None, "mean_abs_dp": None}
    dp = np.abs(_sigmoid(ref) - _sigmoid(oth))
    return {"pairs": len(ref), "label_agreement": float(np.mean(ordinal_labels(ref) == ordinal_labels(oth))),
            "max_abs_dp": float(dp.max()), "mean_abs_dp": float(dp.mean())}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


class Accelerated:
    """The ONNX files of one encoder in a temporary folder, a runner for each (`runners`: "fp32", "int8"), the one
    chosen (`runner`) and the manifest saying why."""

    def __init__(self, tmp: tempfile.TemporaryDirectory, manifest: dict, runners: dict[str, OnnxRunner]):
        self.tmp, self.manifest, self.runners = tmp, manifest, runners

    @property
    def runner(self) -> OnnxRunner:
        """The runner of the precision the manifest chose ("use")."""
        return self.runners[self.manifest["use"]]

    def copy_into(self, folder: Path) -> None:
        """Write the ONNX files and `onnx.json` into `folder` (the weights folder)."""
        for name in (FP32, INT8):
            src = Path(self.tmp.name) / name
            if src.is_file() and name in self.manifest["files"]:
                shutil.copyfile(src, folder / name)
        (folder / MANIFEST).write_text(json.dumps(self.manifest, indent=2, sort_keys=True) + "\n")


def accelerate(encoder, check: Sequence[tuple[str, str, str]] = ()) -> Accelerated:
    """Export `encoder` (a CrossEncoder on torch) to ONNX, choose int8 or fp32 on the `check` triples (see the module
    doc) and return the files, the manifest and the chosen runner. `encoder.runner` is left as it was."""
    import onnxruntime

    tmp = tempfile.TemporaryDirectory(prefix="hiera-ce-onnx-")
    paths = export(encoder.model, encoder.tokenizer.model_input_names, Path(tmp.name))
    before = encoder.runner
    try:
        encoder.runner = None
        reference = encoder.logits(list(check))
        evidence, runners = {}, {}
        for kind, path in paths.items():  # fp32 is the same graph as torch: a few pairs check the export
            encoder.runner = runners[kind] = OnnxRunner(path, one_text_a_run=kind == "int8")
            some = len(check) if kind == "int8" else min(len(check), FP32_CHECK)
            evidence[kind] = agreement(reference[:some], encoder.logits(list(check)[:some]))
    finally:
        encoder.runner = before
    use = choose(evidence["int8"])
    manifest = {"use": use, "files": sorted(p.name for p in paths.values()), "opset": OPSET,
                "onnxruntime": onnxruntime.__version__, "int8_min_agreement": INT8_MIN_AGREEMENT,
                "against_torch": evidence,
                "why": (f"int8 keeps {evidence['int8']['label_agreement']:.3f} of torch's labels on {len(check)} "
                        "check pairs" if check else "no check pairs: int8 not verified, fp32 used")}
    return Accelerated(tmp, manifest, runners)


def choose(int8_evidence: dict) -> str:
    """The path to ship: "int8" when it kept at least `INT8_MIN_AGREEMENT` of torch's labels on at least one check
    pair, else "fp32"."""
    agreed = int8_evidence.get("label_agreement")
    return "int8" if int8_evidence.get("pairs") and agreed is not None and agreed >= INT8_MIN_AGREEMENT else "fp32"


def load_runner(folder: Path, digests: dict[str, str]) -> OnnxRunner | None:
    """The runner `onnx.json` in `folder` chose (its files already checked against `digests`), or None with a note
    when onnxruntime is missing or the folder has no ONNX export (weights saved before it existed)."""
    if MANIFEST not in digests:
        return None
    manifest = json.loads((folder / MANIFEST).read_text())
    chosen = FP32 if manifest["use"] == "fp32" else INT8
    if chosen not in digests:
        raise HieraError(f"{folder / MANIFEST} names {chosen}, which its artifact records no SHA-256 for: refit")
    if not available():
        torch_fallback_note("onnxruntime is not installed")
        return None
    return OnnxRunner(folder / chosen, one_text_a_run=chosen == INT8)


def scoring_length(folder: Path, max_len: int) -> int:
    """The tokens the ONNX path `onnx.json` in `folder` chose to read (`fast_path.choose_path`), else `max_len`."""
    manifest = json.loads((folder / MANIFEST).read_text())
    return int(manifest.get("score_max_len") or max_len)
