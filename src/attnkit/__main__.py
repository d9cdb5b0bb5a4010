"""`python -m attnkit` and the `attnkit` command (its console script): chooses how OpenMP's threads wait
(`attnkit.openmp`) before anything imports torch, then runs `attnkit.cli`."""

from attnkit.openmp import choose_wait_policy


def main() -> int:
    choose_wait_policy()
    from attnkit.cli import main as run

    return run()


if __name__ == "__main__":
    raise SystemExit(main())
