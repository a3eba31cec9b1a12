"""``python -m cvl_eval <command> [flags]``: the commands of `cvl_eval.console` by name."""

from __future__ import annotations

import sys

from cvl_eval.console import COMMANDS

USAGE = f"usage: python -m cvl_eval {{{','.join(COMMANDS)}}} [flags]  (`<command> --help`: flags)"


def main(argv: list[str] | None = None) -> int:
    """Run ``argv[0]`` (a command of `COMMANDS`) with the flags after it."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if not args or args[0] not in COMMANDS:
        unknown = f"unknown command {args[0]!r}\n" if args else ""
        print(f"{unknown}{USAGE}", file=sys.stderr)
        return 2
    sys.argv[0] = f"python -m cvl_eval {args[0]}"  # the usage line of its --help
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
