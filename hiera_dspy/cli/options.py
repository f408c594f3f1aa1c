"""Flags and helpers shared by the command-line tools (optimize.compile, eval.run, eval.ablate, optimize.search)."""

from __future__ import annotations

import argparse
import sys

from hiera_dspy.cli.dry_run import add_dry_run_arguments
from hiera_dspy.cli.engines import add_engine_arguments
from hiera_dspy.cli.lms import add_lm_arguments
from hiera_dspy.data import DATASETS
from hiera_dspy.data.judgment_lists import FORMATS
from hiera_dspy.data.known_evidence import OVERLAP
from hiera_dspy.errors import HieraError
from hiera_dspy.jobs import preparing
from hiera_dspy.jobs.preparing import method_config
from hiera_dspy.jobs.preparing import runs_dir as runs_dir  # where runs live: every command and bench names it here
from hiera_dspy.labels import SCHEME_REGISTRY
from hiera_dspy.metrics.numbers import number
from hiera_dspy.secrets import redact_output
from hiera_dspy.store.run_store import RunStore, StoreError, validate_run_id

EXIT_ERROR_RATE = 3  # the run finished and wrote its outputs, but too many judgments ended in an error


def cli_main(main) -> None:
    """Run a command-line tool's `main()`: keys are redacted from all it prints (logs and tracebacks too), and a
    HieraError (a bad artifact, an unset key variable, an unknown method) ends it with one line `error: ...` and exit
    status 2 (an error that names another status, as an unreachable endpoint does, exits with that one). Only the
    CLIs turn errors into exit codes; the library raises."""
    redact_output()
    try:
        main()
    except HieraError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_status) from None


class _Renamed(argparse.Action):
    """A flag's old spelling, kept one release: it sets the new flag's value and says on stderr that it is renamed."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: {option_string} is renamed {self.new} (one meaning per flag); {option_string} goes in "
              "the next release", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_renamed(parser: argparse.ArgumentParser, new: str, old: str) -> None:
    """Keep `old` as the old spelling of the flag `new` (added already) for one release, hidden from --help."""
    action = parser._option_string_actions[new]
    parser.add_argument(old, dest=action.dest, type=action.type or str, action=_Renamed, new=new, help=argparse.SUPPRESS)


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The data options: --dataset and the input options (scheme, labels, knowledge, bad rows, threads)."""
    g = parser.add_argument_group("data")
    g.add_argument("--dataset", required=True,
                   help=f"NAME or NAME:PATH, NAME one of {' | '.join(DATASETS)} (msrd is bundled; esci, wands, "
                        "homedepot with no path: $HIERA_DATA_DIR/NAME, esci: else tasksource/esci)")
    add_input_options(g)


def add_input_options(g) -> None:
    """What every judging CLI asks of its input beside where it is: label scheme, knowledge, bad rows, threads."""
    g.add_argument("--scheme", help=f"label scheme for jsonl/TREC data: {', '.join(SCHEME_REGISTRY)}")
    g.add_argument("--labels", help="custom label scheme, least relevant first, e.g. 'Bad,Fair,Good'")
    g.add_argument("--guidelines", metavar="FILE",
                   help="your team's guidelines (TOML, or YAML): grades least relevant first with a definition each, "
                        "the binary cut, worked examples, instructions; every LLM method reads them verbatim "
                        "(docs/labelling.md#your-own-guidelines)")
    g.add_argument("--knowledge", default="auto", choices=["auto", "catalog", "web", "none"],
                   help="knowledge source: auto = web if TAVILY_API_KEY is set, else the dataset's catalog")
    g.add_argument("--on-bad-row", default="error", choices=["error", "skip"],
                   help="a malformed input row stops with an error naming file and line (default) or is skipped "
                        "and counted")
    g.add_argument("--threads", type=positive_int, default=1,
                   help="worker threads (one local model serialises its calls)")


def add_judging_arguments(p: argparse.ArgumentParser) -> None:
    """What judges and how, shared by every CLI that judges pairs (eval.run, eval.label, eval.holes): --method |
    --judge, --limit, the run options (--run-id, --store, --wait, --max-error-rate), --retry-errors, --set, the LM
    flags, --engine and --dry-run."""
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--method", help="a registered method, uncompiled (see python -m eval.methods)")
    which.add_argument("--judge", help="a compiled judge artifact (JSON) from optimize.compile")
    p.add_argument("--limit", type=positive_int, help="judge only the first N pairs")
    add_run_arguments(p)
    p.add_argument("--retry-errors", action="store_true", help="re-judge only the judgments that ended in an error")
    add_config_argument(p)
    add_vote_arguments(p)
    add_lm_arguments(p)
    add_engine_arguments(p)
    add_dry_run_arguments(p)


def add_known_arguments(parser: argparse.ArgumentParser) -> None:
    """--known FILE, --on-known-overlap and --known-kind: the known judgments a judge that reads them reads (eval.run, eval.label,
    eval.ablate; eval.holes reads the benchmark's own qrels)."""
    g = parser.add_argument_group("known judgments")
    g.add_argument("--known", metavar="FILE",
                   help="a judgment list of the same queries the judge reads as evidence: qrels:PATH (texts from "
                        "the dataset), jsonl:PATH (labelled pairs), trec:FOLDER (its qrels with its corpus's texts), "
                        f"or a PATH sniffed ({', '.join(FORMATS)}); graded on the pairs' scheme; a judge that reads "
                        "none ignores it (the report says so)")
    g.add_argument("--on-known-overlap", default="error", choices=list(OVERLAP),
                   help="a known judgment of a pair that is also to be judged: stop with an error naming its line "
                        "(default), or drop such judgments from the known ones and count them (skip)")
    g.add_argument("--known-kind", default="auto", choices=["auto", "sample", "pool"],
                   help="what the known judgments are: sample (a random sample of the pairs: their shares are the "
                        "pairs'), pool (the top of some systems' runs: their shares are not), or auto (checked from "
                        "the judge's scores; the report says which was assumed)")


def add_vote_arguments(parser: argparse.ArgumentParser) -> None:
    """--samples N and --temperature T: a vote over N samples of each judgment (hiera_dspy/methods/votes.py)."""
    g = parser.add_argument_group("votes")
    g.add_argument("--samples", type=positive_int,
                   help="judge each pair N times (N distinct requests) and take the median vote; the votes' shares "
                        "are the judgment's distribution and confidence (same as --set samples=N)")
    g.add_argument("--temperature", type=float,
                   help="the LMs' temperature for this run (default: the LM's own, 0; with --samples N > 1: 0.3)")

def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """--set KEY=VALUE (repeatable): one config value of the method, checked by `config_from_args`."""
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                        help="override one config value of the method (repeatable; VALUE is JSON when it parses, "
                             "else text), e.g. --set delegation=never --set llm_share=0.5; "
                             "python -m eval.methods --config NAME lists the keys")


def config_from_args(args: argparse.Namespace, method: str, base: dict | None = None) -> dict:
    """`base` (e.g. a --config file's config) updated with the --set KEY=VALUE pairs, keys checked against the
    method's registered config (`hiera_dspy.jobs.preparing.method_config`)."""
    return method_config(method, getattr(args, "settings", None) or [], base)


def print_metrics(title: str, m: dict, file=None) -> None:
    """One line of a run's metrics (agreement, coverage, errors, cost, delegation) to `file` (stdout)."""
    file = file or sys.stdout
    f = number
    print(f"{title}: n={m['n']} acc={f(m['accuracy'])} macro-F1={f(m['macro_f1'])} kappa={f(m['kappa'])} "
          f"coverage={f(m.get('coverage'), '.2f')} errors={m['errors']} "
          f"tokens/judgment={f(m['tokens_per_judgment'], '.0f')} "
          f"s/judgment={f(m['seconds_per_judgment'], '.1f')} delegation={f(m['delegation_rate'], '.2f')} "
          f"reached-LLM={f(m.get('llm_share'), '.2f')} parse-recovered={m.get('parse_recovered', 0)} "
          f"degraded={m.get('degraded', 0)} truncated={m.get('truncated', 0)}"
          + (f" binary-kappa={f(m['binary_kappa'])}" if m.get("binary_from") and len(m.get("labels", ())) > 2 else "")
          + (f" alpha={f(m['krippendorff_alpha'])}" if "krippendorff_alpha" in m else "")
          + (f" ms/pair(wall)={f(m['wall_ms_per_pair'], '.1f')}" if m.get("wall_ms_per_pair") is not None else ""),
          file=file)


# --- run options: shared by every CLI that judges pairs into the run store --------------------------------------------

def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def error_rate(text: str) -> float:
    """argparse type: a share from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {value}")
    return value


def run_id_arg(text: str) -> str:
    """argparse type: a safe run id (RunStore's rule)."""
    try:
        return validate_run_id(text)
    except StoreError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_run_arguments(parser: argparse.ArgumentParser, *, run_id: bool = True) -> None:
    """The run options of every CLI that judges into the run store (eval.run, eval.label, eval.holes, eval.ablate,
    optimize.compile): which run and store, what to do when another process writes the run, when to fail.
    `run_id=False` for a CLI whose run ids must name what it computed (optimize.compile: the compiled prompts)."""
    g = parser.add_argument_group("run")
    if run_id:
        g.add_argument("--run-id", type=run_id_arg,
                       help="resume or name a run (default: derived from method, data and LMs); with several "
                            "methods (eval.ablate) a prefix: each method's run is PREFIX.METHOD; letters, digits, "
                            ". _ - + = @")
    g.add_argument("--store", help="run store SQLite file (default: runs/store.sqlite)")
    g.add_argument("--wait", action="store_true",
                   help="when another process is writing the same run, wait for it to finish (default: refuse)")
    g.add_argument("--max-error-rate", type=error_rate, default=0.05, metavar="RATE",
                   help=f"exit with status {EXIT_ERROR_RATE}, after writing every output, when more than this share "
                        "of a run's judgments ended in an error (default: 0.05)")
    g.add_argument("--verbose", action="store_true",
                   help="one stderr line per finished judgment (id, label, seconds) beside the progress bar")


def progress_display(args: argparse.Namespace, lms=None, desc: str = ""):
    """How a judging CLI shows its progress: `hiera_dspy.jobs.preparing.progress_display` with --verbose."""
    return preparing.progress_display(getattr(args, "verbose", False), lms, desc)


def open_store(args: argparse.Namespace) -> RunStore:
    """The run store of --store (default runs/store.sqlite); a RequestError if it is not one."""
    return preparing.open_store(getattr(args, "store", None))


def begin_run(store: RunStore, run_id: str, identity: dict, args: argparse.Namespace,
              may_differ: tuple[str, ...] = ()) -> None:
    """Create or resume the run and take its lease (--wait waits for another writer); a RequestError otherwise."""
    preparing.begin_run(store, run_id, identity, getattr(args, "wait", False), may_differ)


def raise_if_stopped(rows) -> None:
    """After every output is written: the run's EndpointDown when it stopped early (hiera_dspy/lm/breaker.py;
    `cli_main` prints it and exits with status 3)."""
    stopped = getattr(rows, "stopped", None)
    if stopped is not None:
        raise stopped


def exit_on_error_rate(runs: dict[str, dict], max_rate: float, hint: str = "") -> None:
    """After every output is written: exit with EXIT_ERROR_RATE if a run's errors / pairs passes --max-error-rate.
    `runs` maps a run's name to its metrics (`errors`, `pairs`); `hint` says how to retry."""
    over = {name: m for name, m in runs.items()
            if m and m.get("pairs") and m.get("errors", 0) / m["pairs"] > max_rate}
    if not over:
        return
    shares = ", ".join(f"{name}: {m['errors']} of {m['pairs']} ({m['errors'] / m['pairs']:.0%})"
                       for name, m in over.items())
    print(f"error: judgments ended in an error above --max-error-rate {max_rate:g} ({shares}); every output is "
          f"written{'; ' + hint if hint else ''}", file=sys.stderr)
    raise SystemExit(EXIT_ERROR_RATE)
