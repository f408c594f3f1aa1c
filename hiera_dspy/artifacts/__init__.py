"""A compiled judge as one self-describing JSON file, and reading the files earlier versions wrote.

- `judge_file`: `save_judge` / `load_judge` (the file's method, graph config, label scheme, LM roles and state).
- `format`: what the file is (format name and version, a size cap, every field's type); `read_artifact` checks it.
- `compat`: loading a compiled state into a program whose signatures have moved on.
"""
