"""Argument parsing that answers a typo helpfully: the usage of the command that was typed
(not the top level's) and the closest names it knows ("did you mean --agent?").

Every ``stopbench`` command builds its parser with :class:`Parser`; subcommands made with
``add_subparsers`` inherit it.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

_UNKNOWN_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the closest of ``known`` to ``word``, or "" when none is close."""
    close = difflib.get_close_matches(word, list(known), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors name the closest option or command to a mistyped
    one, and whose subcommands refuse an unknown option themselves — with their own usage,
    where plain argparse hands it up to the top-level parser, which shows its own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        self.is_subcommand = False

    def add_subparsers(self, **kwargs: Any) -> Any:
        action = super().add_subparsers(**kwargs)
        original = action.add_parser

        def add_parser(name: str, **kw: Any) -> argparse.ArgumentParser:
            sub = original(name, **kw)
            if isinstance(sub, Parser):
                sub.is_subcommand = True
            return sub

        action.add_parser = add_parser  # type: ignore[method-assign]
        return action

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        words = list(sys.argv[1:] if args is None else args)
        if self._subparsers is None and (unknown := self._unknown_options(words)):
            self.error(f"unrecognized arguments: {' '.join(unknown)}")  # before "required": the typo is the cause
        parsed, extras = super().parse_known_args(words, namespace)
        if self.is_subcommand and extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def _unknown_options(self, words: list[str]) -> list[str]:
        """The words before ``--`` that look like options this parser does not have (a
        negative number is a value; a long option may be abbreviated, as argparse allows)."""
        known = self._option_string_actions
        unknown = []
        for word in words:
            if word == "--":
                break
            if not word.startswith("-") or word == "-" or re.match(r"-\d", word):
                continue
            name = word.split("=", 1)[0]
            if name in known or word[:2] in known or (
                    name.startswith("--") and any(o.startswith(name) for o in known)):
                continue
            unknown.append(word)
        return unknown

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}{self._suggestion(message)}\n")

    def _suggestion(self, message: str) -> str:
        if message.startswith("unrecognized arguments:"):
            options = [o for o in self._option_string_actions if o.startswith("--")]
            for word in message.split(":", 1)[1].split():
                if word.startswith("-") and (hint := did_you_mean(word.split("=", 1)[0], options)):
                    return hint
            return ""
        if match := _UNKNOWN_CHOICE.search(message):
            return did_you_mean(match.group(1), re.findall(r"'([^']*)'", match.group(2)))
        return ""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Help that keeps a command's name and its one line together: argparse sizes the name
    column before the subcommands exist, which would push ``calibrate``'s help onto a line of
    its own."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=110)
        self._action_max_length = 16
