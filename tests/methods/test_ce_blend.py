"""ce-blend with a tiny randomly initialised BERT (MiniLM's tokenizer, 1 layer of width 32) in place of MiniLM: it
fits, chooses its blend on held-out train queries, saves its weights beside the artifact, loads them back (same
scores), and refuses weights that are missing or changed; graded schemes get ordinal thresholds; the whole loop
(compile, label, decide, --train-from) runs with it."""

from __future__ import annotations

import pytest

from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair

pytest.importorskip("transformers")


def _pairs(n_queries: int) -> list[Pair]:
    words = ("alien", "space", "horror", "toy", "story", "fox", "owl", "ship")
    out = []
    for q in range(n_queries):
        w = words[q % len(words)]
        for j, (title, label) in enumerate([(f"{w} saga", "Relevant"), (f"quiet pond {q}", "Irrelevant"),
                                            (f"{w} returns", "Relevant"), (f"grey rock {q}", "Irrelevant")]):
            out.append(Pair(f"p:{q}:{j}", f"{w} film", title, f"Year: 199{j}\nOverview: {title} story", label,
                            f"q{q}", f"i{q}-{j}"))
    return out


def _build(pairs):
    from hiera_dspy.methods import BuildContext, build

    return build("ce-blend", BuildContext(get_scheme("msrd"), train=pairs), embedder="lexical", ce_pairs=64,
                 ce_max_len=32, ce_lr=1e-3, dev_queries=8)


def test_fits_chooses_on_dev_and_round_trips_through_an_artifact(tiny_base, tmp_path):
    from hiera_dspy.artifacts.judge_file import ArtifactError, files_folder, load_judge, save_judge
    from hiera_dspy.lm.roles import RoleLMs

    pairs = _pairs(40)
    program = _build(pairs).prepare()
    blend = program.blend
    assert blend["dev_pairs"] == 16 and blend["fit_pairs"] == len(pairs) - 8 * 4
    assert 0.0 <= blend["weight"] <= 1.0 and 0.2 <= blend["threshold"] <= 0.8 and blend["dev_kappa"] > 0.5
    probe = pairs[:8]
    before = [program(**p.inputs()) for p in probe]
    assert all(b.label in ("Relevant", "Irrelevant") and 0 <= b.cross_encoder <= 1 for b in before)

    path = save_judge(program, tmp_path / "art" / "ce.json", scheme=get_scheme("msrd"), lms=RoleLMs(),
                      knowledge="none", dataset="msrd")
    folder = files_folder(path)
    assert folder.name == "ce.weights" and (folder / "model.safetensors").is_file()
    loaded = load_judge(path)
    after = [loaded(**p.inputs()) for p in probe]
    assert [a.label for a in after] == [b.label for b in before]
    assert [a.cross_encoder for a in after] == pytest.approx([b.cross_encoder for b in before], abs=1e-6)

    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="SHA-256"):
        load_judge(path)
    weights.unlink()
    with pytest.raises(ArtifactError, match="weights missing"):
        load_judge(path)


def test_prefetch_scores_in_batches_what_forward_scores_one_by_one(tiny_base):
    """`prefetch` (what optimize.compile and bench/conclusions.py call before judging) changes no judgment; a pair
    it did not see is scored on its own; a refit forgets the prefetched scores of the old weights."""
    program = _build(_pairs(40)).prepare()
    probe = _pairs(12)[:10]
    alone = [program(**p.inputs()) for p in probe]
    program.prefetch(probe[:6])
    batched = [program(**p.inputs()) for p in probe]
    assert [b.label for b in batched] == [a.label for a in alone]
    # int8 (chosen when it keeps the labels) quantizes activations per batch: a score moves ~1e-4 with its batch
    assert [b.cross_encoder for b in batched] == pytest.approx([a.cross_encoder for a in alone], abs=1e-3)
    assert len(program._prefetched) == 6
    program.prepare(_pairs(30))
    assert program._prefetched == {}


def _graded_pairs(n_queries: int, with_grade: bool = False) -> list[Pair]:
    """Home Depot-like pairs of three grades: both query words in the title (Highly), one (Partially), none
    (Irrelevant); `with_grade`: a raters' mean beside the bin, as the Home Depot loader gives it."""
    words = ("drill", "shovel", "battery", "hose", "ladder", "lamp", "rake", "saw")
    out = []
    for q in range(n_queries):
        w = words[q % len(words)]
        rows = [(f"{w} pro {q}", "Highly relevant", 1.67), (f"{w} case {q}", "Partially relevant", 0.67),
                (f"grey rock {q}", "Irrelevant", 0.0), (f"pro {w} kit", "Highly relevant", 2.0),
                (f"{w} strap {q}", "Partially relevant", 1.33), (f"pond {q}", "Irrelevant", 0.33)]
        for j, (title, label, grade) in enumerate(rows):
            out.append(Pair(f"h:{q}:{j}", f"{w} pro", title, "", label, f"q{q}", f"i{q}-{j}",
                            grade if with_grade else None))
    return out


def test_graded_labels_fit_three_grades_with_ordinal_thresholds_and_round_trip(tiny_base, tmp_path):
    """Three grades (Home Depot's scheme): two increasing thresholds chosen on a balanced dev split, a distribution
    over the three labels in `scores`, both kappas recorded, the artifact loads back with the same labels."""
    from hiera_dspy.artifacts.judge_file import load_judge, save_judge
    from hiera_dspy.lm.roles import RoleLMs
    from hiera_dspy.methods import BuildContext, build

    scheme = get_scheme("homedepot")
    pairs = _graded_pairs(40, with_grade=True)
    program = build("ce-blend", BuildContext(scheme, train=pairs), embedder="lexical", ce_pairs=200, ce_max_len=16,
                    ce_lr=1e-3, dev_queries=10).prepare()
    blend = program.blend
    low, high = blend["thresholds"]
    assert 0 < low < high < 2 and "threshold" not in blend
    assert blend["dev_label_counts"] == {label: 10 for label in scheme.labels}  # balanced: one of each per query
    assert blend["dev_kappa"] > 0.5 and blend["dev_weighted_kappa"] >= blend["dev_kappa"] - 0.2
    probe = pairs[:12]
    before = [program(**p.inputs()) for p in probe]
    for b in before:
        assert set(b.scores) == set(scheme.labels) and sum(b.scores.values()) == pytest.approx(1.0)
        assert 0.0 <= b.cross_encoder <= 1.0 and b.label in scheme.labels
    assert len({b.label for b in before}) == 3
    path = save_judge(program, tmp_path / "hd.json", scheme=scheme, lms=RoleLMs(), knowledge="none",
                      dataset="homedepot")
    after = [load_judge(path)(**p.inputs()) for p in probe]
    assert [a.label for a in after] == [b.label for b in before]


def test_an_unknown_blend_objective_fails_at_build():
    from hiera_dspy.methods import BuildContext, build

    with pytest.raises(ValueError, match="blend_objective.*kappa | weighted_kappa"):
        build("ce-blend", BuildContext(get_scheme("esci"), train=[]), embedder="lexical", blend_objective="f1")
    program = build("ce-blend", BuildContext(get_scheme("esci"), train=[]), embedder="lexical",
                    blend_objective="weighted_kappa", ce_epochs=2, ce_precision="fp32")
    assert program.blend_objective == "weighted_kappa" and program.ce_options["epochs"] == 2
    assert program.ce_options["precision"] == "fp32"
    with pytest.raises(ValueError, match="ce_precision"):
        build("ce-blend", BuildContext(get_scheme("esci"), train=[]), embedder="lexical", ce_precision="fp16")


def test_compile_label_decide_and_refit_from_the_decisions(tiny_base, tmp_path):
    """The loop with ce-blend: optimize.compile writes the artifact and its weights folder, eval.label judges with it,
    a person decides, --train-from refits both parts into a new artifact with its own folder."""
    import json

    from eval import escalations
    from eval import label as eval_label
    from hiera_dspy.artifacts.format import read_artifact
    from hiera_dspy.artifacts.judge_file import files_folder
    from hiera_dspy.cli.options import runs_dir
    from hiera_dspy.store.run_store import RunStore
    from optimize import compile as compile_cli

    def rows(pairs):
        return "".join(json.dumps({"id": p.id, "query": p.query, "item_title": p.item_title, "item_text": p.item_text,
                                   "query_id": p.query_id, "item_id": p.item_id,
                                   **({} if p.label is None else {"label": int(p.label == "Relevant")})}) + "\n"
                       for p in pairs)

    data = tmp_path / "data"
    data.mkdir()
    pairs = _pairs(40)
    (data / "train.jsonl").write_text(rows(pairs[:120]))
    (data / "dev.jsonl").write_text(rows(pairs[120:]))
    todo = tmp_path / "todo.jsonl"
    todo.write_text(rows([Pair(f"t{i}", "owl film", f"owl tale {i}", "Overview: owls", None, f"tq{i}", f"ti{i}")
                          for i in range(6)]))
    common = ["--knowledge", "none", "--skip-before", "--set", "embedder=lexical", "--set", "ce_pairs=64",
              "--set", "ce_max_len=32", "--set", "ce_lr=0.001", "--set", "dev_queries=6"]
    art, v2 = tmp_path / "v1.json", tmp_path / "v2.json"
    compile_cli.main(["--dataset", f"msrd:{data}", "--method", "ce-blend", *common, "--out", str(art)])
    assert (files_folder(art) / "model.safetensors").is_file()
    eval_label.main(["--dataset", f"jsonl:{todo}", "--scheme", "msrd", "--judge", str(art), "--knowledge", "none",
                     "--out", str(tmp_path / "labelled")])
    store = RunStore(runs_dir() / "store.sqlite")
    run_id = [r for r in store.run_ids() if (store.run_config(r).get("labelling") or {}).get("kind") == "label"][-1]
    decisions = tmp_path / "human.jsonl"
    decisions.write_text("".join(json.dumps({"id": f"t{i}", "label": "Irrelevant"}) + "\n" for i in range(4)))
    escalations.main(["--run", run_id, "--labels", str(decisions), "--who", "ana"])
    compile_cli.main(["--knowledge", "none", "--skip-before", "--train-from", run_id, "--judge", str(art),
                      "--out", str(v2)])
    doc = read_artifact(v2)
    assert doc["method"] == "ce-blend" and doc["training"]["from_runs"] == [{"run_id": run_id, "decisions": 4}]
    assert doc["extra"]["cross_encoder"]["model.safetensors"] != read_artifact(art)["extra"]["cross_encoder"][
        "model.safetensors"]  # refitted: new weights, in v2's own folder
    assert (files_folder(v2) / "model.safetensors").is_file()


def test_dev_split_is_query_disjoint_and_balanced_and_takes_single_label_queries_when_it_must():
    from hiera_dspy.methods.cross import dev_split

    esci = get_scheme("esci").labels
    spread = [Pair(f"s{i}", f"q {i}", "t", "", esci[i % 4], f"q{i}", f"i{i}") for i in range(80)]  # a query a pair
    fit, dev = dev_split(spread, esci, 20, seed=0)
    assert {p.label: sum(d.label == p.label for d in dev) for p in dev} == {label: 5 for label in esci}
    assert not {p.query_id for p in fit} & {p.query_id for p in dev} and len(fit) == 60
    binary = _pairs(40)
    fit, dev = dev_split(binary, ("Irrelevant", "Relevant"), 8, seed=0)
    assert len(dev) == 16 and [p.label for p in dev[:2]] == ["Relevant", "Irrelevant"]  # one of each, top first
    assert len({p.query_id for p in dev}) == 8 and not {p.query_id for p in fit} & {p.query_id for p in dev}
    with pytest.raises(ValueError, match="two labels or more"):
        dev_split([p for p in binary if p.label == "Relevant"], ("Irrelevant", "Relevant"), 8, seed=0)


def test_two_labels_keep_the_binary_computation_the_msrd_table_was_measured_with():
    """The graded code's two-label case is the earlier binary one: the same fine-tuning sample (half relevant, half
    not, the same seeded draws) and the same blend search (every weight x every threshold, ties to the larger)."""
    import random

    import numpy as np

    from hiera_dspy.methods.cross import WEIGHTS, choose_blend
    from hiera_dspy.methods.grades import THRESHOLDS
    from hiera_dspy.metrics.agreement import kappa_of_labels
    from hiera_dspy.signals.cross_encoder import balanced_sample

    scheme = get_scheme("msrd")
    pairs = _pairs(60)
    rng = random.Random(7)
    relevant = [p for p in pairs if p.label == "Relevant"]
    irrelevant = [p for p in pairs if p.label == "Irrelevant"]
    before = rng.sample(relevant, 50) + rng.sample(irrelevant, 50)
    rng.shuffle(before)
    assert balanced_sample(pairs, scheme, 100, random.Random(7)) == before

    gen = np.random.default_rng(1)
    gold = ["Relevant" if g else "Irrelevant" for g in gen.random(120) < 0.5]
    scorer_p = np.clip([0.6 if g == "Relevant" else 0.4 for g in gold] + gen.normal(0, 0.25, 120), 0, 1)
    ce_p = np.clip([0.7 if g == "Relevant" else 0.35 for g in gold] + gen.normal(0, 0.3, 120), 0, 1)
    labels = scheme.labels

    def old_labels(w, th):
        mixed = w * ce_p + (1 - w) * scorer_p
        return [labels[-1] if v >= th else labels[0] for v in mixed]

    old = max((kappa_of_labels(gold, old_labels(w, th)), float(w), float(th)) for w in WEIGHTS for th in THRESHOLDS)
    new = choose_blend(gold, np.column_stack([1 - scorer_p, scorer_p]), np.column_stack([1 - ce_p, ce_p]), labels)
    assert new[0] == pytest.approx(old[0]) and new[1] == old[1] and new[2] == (old[2],)


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_fine_tuning_precision_autocasts_the_forward_pass_only(tiny_base, precision, monkeypatch):
    """bf16 autocast runs the forward pass in bf16 ("auto" on a CPU with bf16; "bf16" always), the loss and the
    weights stay fp32."""
    import torch

    import hiera_dspy.signals.cross_encoder as ce
    from hiera_dspy.signals import cpu

    seen = []
    real = ce.forward_precision

    def spy(name):
        context = real(name)
        seen.append(isinstance(context, torch.autocast))
        return context

    monkeypatch.setattr(ce, "forward_precision", spy)
    monkeypatch.setattr(cpu, "has_bf16", lambda: precision == "bf16")
    pairs = _pairs(24)
    encoder = ce.fine_tune(pairs, get_scheme("msrd"), train_pairs=256, max_len=16, lr=1e-3, progress=False,
                           precision="auto")
    assert seen and all(seen) == (precision == "bf16") and any(seen) == (precision == "bf16")
    assert {p.dtype for p in encoder.model.parameters()} == {torch.float32}
    assert ce.forward_precision("fp32").__class__.__name__ == "nullcontext"
    assert isinstance(ce.forward_precision("bf16"), torch.autocast)


def _passage_pairs(n_queries: int) -> list[Pair]:
    """TREC-like pairs of four grades: untitled passages of varied length, the grade readable from the words."""
    words = ("river", "loan", "engine", "garden", "violin", "glacier")
    filler = ["the", "of", "a", "and", "in", "to", "is", "was", "for", "on", "with", "as", "by", "at", "from"]
    out = []
    for q in range(n_queries):
        w = words[q % len(words)]
        for j in range(8):
            grade = j % 4
            text = " ".join([w] * grade + filler * (1 + (j * q) % 5) + [f"note{q}"])  # <= 128 tokens: the tiny BERT's
            out.append(Pair(f"t:{q}:{j}", f"{w} facts", "", text, get_scheme("trec").labels[grade], f"q{q}",
                            f"d{q}-{j}"))
    return out


def test_blend_folds_choose_the_blend_out_of_fold_on_every_train_pair_and_auto_budget_is_recorded(tiny_base,
                                                                                                 tmp_path):
    """blend_folds=3: the blend is chosen on every train pair, each scored by models of the other folds' queries
    (so the judge fits on all of them); ce_max_len=auto records the budget chosen from the lengths and how many
    pairs it cuts; the artifact loads back at that budget with the same labels."""
    from hiera_dspy.artifacts.judge_file import load_judge, save_judge
    from hiera_dspy.lm.roles import RoleLMs
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.methods.grades import query_folds
    from hiera_dspy.signals.pair_lengths import LADDER

    scheme = get_scheme("trec")
    pairs = _passage_pairs(12)
    folds = query_folds(pairs, 3, seed=0)
    fold_of_query = {(p.query_id, f) for p, f in zip(pairs, folds)}  # one fold a query
    assert len(fold_of_query) == len({p.query_id for p in pairs})
    assert sorted(set(folds)) == [0, 1, 2]
    program = build("ce-blend", BuildContext(scheme, train=pairs), embedder="lexical", ce_pairs=96, ce_max_len="auto",
                    ce_lr=1e-3, blend_folds=3).prepare()
    blend = program.blend
    assert blend["dev_pairs"] == blend["fit_pairs"] == len(pairs) and blend["chosen_by"].startswith("out of fold")
    assert sum(blend["dev_label_counts"].values()) == len(pairs) == sum(blend["dev_predicted_counts"].values())
    assert len(blend["thresholds"]) == 3
    tokens = blend["tokens"]
    assert tokens["max_len"] in LADDER and tokens["truncated"] <= 0.10 and program.encoder.max_len == tokens["max_len"]
    assert any("token budget" in line for line in program.learned_from())
    probe = pairs[:8]
    before = [program(**p.inputs()).label for p in probe]
    path = save_judge(program, tmp_path / "dl.json", scheme=scheme, lms=RoleLMs(), knowledge="none", dataset="trec")
    loaded = load_judge(path)
    assert loaded.encoder.max_len == tokens["max_len"]
    assert [loaded(**p.inputs()).label for p in probe] == before


def test_the_token_budget_keeps_64_for_field_layout_items_and_reads_most_free_text_whole(tiny_base):
    """MSRD's field layout keeps its measured 64 tokens however long the overview; free text gets the shortest cut
    of the ladder that reads 90% of the pairs whole, and the evidence says how many each cut truncates."""
    from transformers import AutoTokenizer

    from hiera_dspy.signals.cross_encoder import base_folder
    from hiera_dspy.signals.pair_lengths import choose_max_len

    tok = AutoTokenizer.from_pretrained(base_folder())
    long_overview = " ".join(["a quiet story of a town"] * 60)
    movies = [Pair(f"m{i}", "alien film", "Alien", f"Overview: {long_overview}\nYear: 1979\nGenres: Horror", "Relevant",
                   f"q{i}", f"i{i}") for i in range(20)]
    assert choose_max_len(movies, tok)["max_len"] == 64
    passages = [Pair(f"t{i}", "river facts", "", " ".join(["water"] * (20 + 10 * (i % 10))), "Relevant", f"q{i}",
                     f"d{i}") for i in range(50)]  # 20 .. 110 words: 110 + query tokens at most
    choice = choose_max_len(passages, tok)
    assert choice["max_len"] == 128 and choice["truncated"] == 0.0
    assert choice["truncated_share"]["64"] > 0.5 and set(choice["percentiles"]) == {"50", "90", "95", "99"}


def test_fine_tuning_on_one_thread_gives_torch_its_threads_back(tiny_base, monkeypatch):
    """threads=1 (ce-blend's fine-tuning beside the scorer's fit) trains on one torch thread and restores the count."""
    import torch

    import hiera_dspy.signals.cross_encoder as ce

    seen, real, before = [], ce._fine_tune, torch.get_num_threads()
    monkeypatch.setattr(ce, "_fine_tune", lambda *args: seen.append(torch.get_num_threads()) or real(*args))
    ce.fine_tune(_pairs(24), get_scheme("msrd"), train_pairs=64, max_len=16, progress=False, threads=1)
    assert seen == [1] and torch.get_num_threads() == before


def test_the_fine_tuning_imports_are_resolved_before_its_worker_starts_and_its_failure_names_the_step(
        tiny_base, monkeypatch):
    """prepare resolves the fine-tuning's imports and base model on the calling thread (`preload`), then fine-tunes
    on a worker beside the scorer's fit; the worker's failure is a HieraError naming the step, raised after the
    scorer's fit finished."""
    import threading

    import hiera_dspy.signals.cross_encoder as ce
    from hiera_dspy.errors import HieraError

    events, real_preload = [], ce.preload

    def preload(*args, **kwargs):
        events.append(("preload", threading.current_thread().name))
        return real_preload(*args, **kwargs)

    def fine_tune(pairs, scheme, *, start=None, **options):
        events.append(("fine_tune", threading.current_thread().name, start is not None))
        raise ImportError("cannot import name 'AutoModelForSequenceClassification' from 'transformers'")

    monkeypatch.setattr(ce, "preload", preload)
    monkeypatch.setattr(ce, "fine_tune", fine_tune)
    program = _build(_pairs(40))
    with pytest.raises(HieraError, match="cross-encoder's fine-tuning on .* failed .*ImportError.*embedding cache"):
        program.prepare()
    main = threading.current_thread().name
    assert events[0] == ("preload", main)
    assert events[1][0] == "fine_tune" and events[1][1] != main and events[1][2]
    assert program.scorer_state._scorer is not None  # the scorer's fit finished before the failure was raised
