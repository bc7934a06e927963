"""The model-backed part of a profile: which skills ask a model, which model, and how.

``planner = "model"`` and ``judge = "model"`` bind a language model to PARSE_CLAIM and
VERIFY (``model_url``, ``model``, ``api_key_env``: the *name* of the environment variable
holding the key, never the key); ``on_model_error`` says whether a model that is
unreachable or keeps answering badly falls back to the deterministic skill or fails the
step; ``max_tokens_total`` bounds the tokens the session may use. A session stores these
in its profile, the budget and the digest of every prompt it uses in its config, and each
step's skill reads :func:`model_input` (``None``: the deterministic skill, as always).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from claimfsm.engine.profile import Profile

__all__ = ["MODEL_KEYS", "Planner", "check_model", "model_config", "model_input",
           "prompt_digests"]

Planner = Literal["rules", "model"]

MODEL_KEYS: tuple[str, ...] = ("planner", "model_url", "model", "api_key_env",
                               "on_model_error", "max_tokens_total")
"""The profile's model keys: options ``--planner`` etc., the same names in claimfsm.toml."""

#: The prompt each model-backed role uses (``claimfsm.skills.model_call.PROMPTS``).
_ROLES: Mapping[str, str] = {"planner": "planner", "judge": "judge"}


def prompt_digests() -> dict[str, str]:
    """``{name: "sha256:..."}`` of the prompt files the package ships (what a machine's
    version includes; a session stores those it uses)."""
    from claimfsm.skills.model_call import prompt_digests as digests

    return digests()


def _roles(profile: Profile) -> list[str]:
    return [role for role in _ROLES if getattr(profile, role) == "model"]


def check_model(profile: Profile) -> None:
    """Raise ``ValueError`` (the profile's validator reports it with the field) when a
    model-backed skill lacks its model."""
    roles = _roles(profile)
    if not roles:
        return
    for key in ("model_url", "model"):
        if not getattr(profile, key):
            raise ValueError(f"{roles[0]} 'model' needs {key} (--{key.replace('_', '-')})")
    url = str(profile.model_url)
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"model_url: {url!r} is not an http(s) URL")


def model_config(profile: Profile) -> dict[str, Any]:
    """Session-config entries of the model part: ``max_tokens_total`` (the runtime's
    budget) and ``prompts`` (the digest of each prompt the session uses)."""
    out: dict[str, Any] = {}
    if profile.max_tokens_total is not None:
        out["max_tokens_total"] = profile.max_tokens_total
    roles = _roles(profile)
    if roles:
        digests = prompt_digests()
        out["prompts"] = {role: digests[_ROLES[role]] for role in roles}
    return out


def model_input(config: Mapping[str, Any], role: str) -> dict[str, Any] | None:
    """The ``model`` a skill's input gets for ``role`` (``planner``, ``judge``) in a
    session with ``config``; ``None`` when the role is not model-backed (the input then
    stays as it was before models, so recorded sessions replay unchanged)."""
    stored = config.get("profile")
    if not isinstance(stored, Mapping) or stored.get(role) != "model":
        return None
    out = {"url": stored.get("model_url"), "model": stored.get("model"),
           "on_error": stored.get("on_model_error", "fallback")}
    if stored.get("api_key_env"):
        out["api_key_env"] = stored["api_key_env"]
    prompts = config.get("prompts")
    if isinstance(prompts, Mapping) and role in prompts:
        out["prompt"] = prompts[role]
    return out
