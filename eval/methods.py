"""List the registered methods: `python -m eval.methods`; one method's config keys as a table (key, type, default,
allowed values, meaning): `python -m eval.methods --config NAME` (`--json` for the defaults as JSON). Change them with
--set KEY=VALUE in eval.run and optimize.compile; a value outside the allowed ones is refused."""

import argparse
import json

from hiera_dspy.cli.options import cli_main
from hiera_dspy.methods import METHOD_REGISTRY, available
from hiera_dspy.methods.params import PARAMS


def config_table(name: str) -> str:
    """One method's config keys: key, type, default (unset: an option without a default), allowed values, meaning."""
    info = available()[name]
    rows = [("key", "type", "default", "allowed", "meaning")]
    for key, default in {**info.defaults, **{k: "(unset)" for k in info.options}}.items():
        param = PARAMS[key]
        shown = default if isinstance(default, str) and default == "(unset)" else json.dumps(default, default=list)
        rows.append((key, param.type.__name__, shown, param.allowed(), param.doc))
    widths = [max(len(str(row[i])) for row in rows) for i in range(4)]
    return "\n".join("  ".join(str(cell).ljust(widths[i]) if i < 4 else str(cell) for i, cell in enumerate(row))
                     .rstrip() for row in rows)


def main(argv: list[str] | None = None) -> None:
    """List the registered methods, or print one method's config keys."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--config", metavar="NAME", help="print this method's config keys: type, default, allowed values")
    p.add_argument("--json", action="store_true", help="with --config: the keys and defaults as JSON (null: unset)")
    args = p.parse_args(argv)
    methods = available()
    if args.config:
        METHOD_REGISTRY[args.config]  # an unknown name: UnknownName listing the registered methods
        info = methods[args.config]
        if args.json:
            print(json.dumps({**info.defaults, **{key: None for key in info.options}}, indent=1, default=list))
        else:
            print(f"{args.config}: {info.doc}\n\n{config_table(args.config)}")
        return
    for name, info in sorted(methods.items(), key=lambda kv: (kv[1].family, kv[0])):
        print(f"{name:26s} {info.family:9s} {info.doc}")


if __name__ == "__main__":
    cli_main(main)
