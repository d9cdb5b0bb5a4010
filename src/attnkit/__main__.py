"""`python -m attnkit` is the `attnkit` command."""

from attnkit.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
