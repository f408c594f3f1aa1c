"""List the registered methods: `python -m eval.methods`."""

from hiera_dspy.methods import available


def main() -> None:
    for name, info in sorted(available().items(), key=lambda kv: (kv[1].family, kv[0])):
        print(f"{name:26s} {info.family:9s} {info.doc}")


if __name__ == "__main__":
    main()
