"""`python -m attnkit` and the `attnkit` command (its console script). Before anything imports torch, it
chooses how OpenMP's threads wait (`attnkit.openmp`) and re-executes the commands that allocate most
on jemalloc (`attnkit.allocator`), then runs `attnkit.cli`."""

import sys

from attnkit.allocator import use_jemalloc_for
from attnkit.openmp import choose_wait_policy


def main() -> int:
    choose_wait_policy()
    use_jemalloc_for(sys.argv[1:])
    from attnkit.cli import main as run

    return run()


if __name__ == "__main__":
    raise SystemExit(main())
