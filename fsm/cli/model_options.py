"""The command-line options of model-backed skills, shared by verify, start, batch and eval.

Each is a key of the profile (the same name with underscores in ``claimfsm.toml``); an
option not given is ``None`` and leaves the config file's value or the default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["model_options"]

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option("--model-url", "model_url", default=None, metavar="URL",
                 help="An OpenAI-compatible API's base URL (Chat Completions), e.g. "
                 "http://127.0.0.1:8080/v1 for llama.cpp's server."),
    click.option("--model", "model", default=None, metavar="NAME",
                 help="The model name the server is asked for."),
    click.option("--api-key-env", "api_key_env", default=None, metavar="VAR",
                 help="The environment variable holding the API key (the key itself is "
                 "read at each call and stored nowhere)."),
    click.option("--planner", "planner", type=click.Choice(["rules", "model"]), default=None,
                 help="Evidence query planner: the deterministic rules, or the model "
                 "(checked by the same rules). Default: the config file's, else rules."),
    click.option("--on-model-error", "on_model_error",
                 type=click.Choice(["fallback", "fail"]), default=None,
                 help="When the model is unreachable or keeps answering badly: fall back "
                 "to the deterministic skill (recorded as such), or fail the step. "
                 "Default: fallback."),
    click.option("--max-tokens-total", "max_tokens_total", type=click.IntRange(min=0),
                 default=None, metavar="N",
                 help="Model tokens the session may use (prompt and completion); never "
                 "given back by a rollback. Default: unbounded."),
)


def model_options(fn: F) -> F:
    """Add the model options; the command receives them as keyword arguments."""
    for option in reversed(_OPTIONS):
        fn = option(fn)
    return fn
