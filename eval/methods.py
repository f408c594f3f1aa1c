"""List the registered methods: `python -m eval.methods`; one method's config keys and defaults:
`python -m eval.methods --config NAME` (change them with --set KEY=VALUE in eval.run and optimize.compile)."""

import argparse
import json

from hiera_dspy.methods import available


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--config", metavar="NAME",
                   help="print this method's config keys and default values (JSON; null: optional, unset)")
    args = p.parse_args(argv)
    methods = available()
    if args.config:
        if args.config not in methods:
            raise SystemExit(f"error: unknown method {args.config!r}; python -m eval.methods lists them")
        info = methods[args.config]
        print(json.dumps({**info.defaults, **{key: None for key in info.options}}, indent=1, default=list))
        return
    for name, info in sorted(methods.items(), key=lambda kv: (kv[1].family, kv[0])):
        print(f"{name:26s} {info.family:9s} {info.doc}")


if __name__ == "__main__":
    main()
