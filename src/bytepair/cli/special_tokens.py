"""`bytepair add-special-tokens`: special tokens added to a saved tokenizer after training, with
new ids after the last (every existing id unchanged), and the role options (`--eos-token`, ...,
`--model-max-length`) that this command and `train` share.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .._roles import ROLES
from .options import formats_option, model_argument, role_options
from .parser import Commands

if TYPE_CHECKING:
    from ..encoding import Tokenizer


def add_special_tokens_parser(sub: Commands) -> None:
    cmd = sub.add_parser(
        "add-special-tokens",
        help="add special tokens to a saved tokenizer (new ids after the last) and write it in "
        "every format",
    )
    model_argument(cmd, "the tokenizer to add to")
    cmd.add_argument("tokens", nargs="*", metavar="TOKEN", help="special tokens to add, in order")
    cmd.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="output folder (may be the input folder: each file is replaced atomically)",
    )
    formats_option(cmd)
    cmd.add_argument("--quiet", action="store_true", help="no summary")
    role_options(cmd, kept=True)


def add_special_tokens_command(args: argparse.Namespace) -> None:
    from ..formats import check_formats
    from ..loading import load

    check_formats(args.formats)
    roles = role_values(args)
    if not args.tokens and not roles and args.model_max_length is None:
        raise ValueError(
            "nothing to change: give special tokens to add, or a role option such as --eos-token"
        )
    tok = load(args.model)
    new = tok.with_special_tokens(
        args.tokens, special_token_roles=roles, model_max_length=args.model_max_length
    )
    written = new.save(args.output, formats=args.formats)
    if not args.quiet:
        added = ", ".join(f"{t} = {new.special_tokens[t]}" for t in args.tokens) or "none"
        print(f"added special tokens: {added}; vocabulary {new.n_vocab:,}", file=sys.stderr)
        roles_now = ", ".join(f"{r}={t}" for r, t in new.special_token_roles.items()) or "none"
        print(f"roles: {roles_now}", file=sys.stderr)
        print(f"wrote {args.output}/: {', '.join(p.name for p in written)}", file=sys.stderr)


def role_values(args: argparse.Namespace) -> dict[str, str | None]:
    """The roles given on the command line (role → token; None for '', which removes it)."""
    given = {role: getattr(args, role) for role in ROLES}
    return {role: token or None for role, token in given.items() if token is not None}


def check_role_options(args: argparse.Namespace, special_tokens: list[str]) -> None:
    """Before training: a role must name one of `--special-token`, unless the special tokens
    also come from elsewhere (--continue-from, --from-counts), when `apply_role_options`
    checks after training."""
    if args.model_max_length is not None and args.model_max_length < 1:
        raise ValueError(f"--model-max-length must be 1 or more, got {args.model_max_length}")
    if args.continue_from is not None or args.from_counts is not None:
        return
    for role, token in role_values(args).items():
        if token is not None and token not in special_tokens:
            flag = "--" + role.replace("_", "-")
            raise ValueError(
                f"{flag} {token!r} is not a special token; add it with --special-token {token!r}"
            )


def apply_role_options(tok: Tokenizer, args: argparse.Namespace) -> Tokenizer:
    """`tok` with the roles and maximum length of the command line (the others kept)."""
    roles: dict[str, str | None] = dict(tok.special_token_roles)
    roles |= role_values(args)
    tok.special_token_roles = roles
    if args.model_max_length is not None:
        tok.model_max_length = args.model_max_length
    return tok
