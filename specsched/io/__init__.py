"""Input and output for every command: what comes in is read once, what goes out is written once.

- `specsched.io.errors`: `InputError`, bad user input as one stderr line naming file, line and field (exit
  2 via specbed.cli).
- `specsched.io.inputs`: every input file through one layer (regular files, size caps, TOML/JSON/CSV
  limits, one-line errors) and the one-line `warning:`s.
- `specsched.io.safeio`: outputs checked before the work and written atomically.
- `specsched.io.results`: the one results writer (strict JSON, NaN -> null; CSV; the resolved config beside
  every result) and the output flags' vocabulary (`--out DIR|FILE`, `--json FILE`).
- `specsched.io.progress`: a progress line with an ETA for long work.

May import: numpy, the standard library, these modules.
"""
