"""The verification profile: how a session retrieves evidence and judges it.

One typed value, the same for every entry point (``verify``, ``start``, ``eval``, the
Python :class:`~claimfsm.engine.runtime.Engine`): retrieval ``lexical`` (BM25) or ``hybrid`` (BM25
fused with sentence embeddings, the ``semantic`` extra), judge ``lexical`` or ``learned``
(a model file from ``claimfsm train``). It is resolved once at the boundary (command-line
options over a config file over the defaults), validated there with errors that name the
field, and stored in the session's config under ``"profile"``, so every later step, the
record and a replay use what the session started with.

The defaults are what installs without heavy extras: lexical retrieval, lexical judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from claimfsm.engine.errors import ClaimFsmError, ErrorCode
from claimfsm.engine.model_profile import MODEL_KEYS, Planner, check_model, model_config

__all__ = [
    "CONFIG_FILE",
    "PROFILE_KEYS",
    "RUN_CONFIG",
    "Judge",
    "Profile",
    "ProfileError",
    "Retrieval",
    "find_config",
    "profile_of",
    "resolve_profile",
    "stored_profile",
]

CONFIG_FILE = "claimfsm.toml"
"""Read from the working directory; ``[tool.claimfsm]`` in ``pyproject.toml`` otherwise."""

PROFILE_KEYS: tuple[str, ...] = ("retrieval", "judge", "stance_model", *MODEL_KEYS, "review",
                                  "pause_before", "pause_after")
"""The keys a config file may set."""

RUN_CONFIG: Mapping[str, Any] = {"docs_per_claim": 20, "per_claim": 20, "min_best": 0.5,
                                  "judge": "calibrated", "claim_lim": 20, "rank": True,
                                  "batch": 32}
"""The session settings every profile runs with, so ``verify`` on a corpus and ``eval`` on
the same corpus compute the same thing: EXTRACT reads every hit, ranks the pool, keeps up
to 20 sentences per subclaim (recall@20 is measurable) and asks for the follow-up round
when no sentence covers half of a subclaim's key terms (``claim_lim`` is
``claimfsm.skills.retrieve.CLAIM_LIM``, written out so that every command need not import the
retrieval skill; a test keeps them equal); the lexical judge uses the
thresholds calibrated on real-world claims (``claimfsm.skills.stance.config.CALIBRATED_CONFIG``);
RETRIEVAL runs up to 32 ready plan steps a step (``batch``), their calls at the same time
(``max_concurrent_tools`` at once, ``claimfsm.engine.limits``): a claim's searches wait for
the slowest answer, not for the sum."""

Retrieval = Literal["lexical", "hybrid"]
Judge = Literal["lexical", "learned", "model"]
Review = Literal["never", "low_confidence", "always"]
#: People-in-the-loop options (docs/review.md): written into a session's profile and
#: config only when set, so a session without them is stored as it always was.
_PEOPLE: tuple[str, ...] = ("review", "pause_before", "pause_after")


class ProfileError(ClaimFsmError):
    """A profile that cannot run: a bad value, a missing model, a missing extra."""

    code = ErrorCode.BAD_PROFILE


class Profile(BaseModel):
    """How a session verifies. ``stance_model`` is set exactly when ``judge`` is
    ``learned`` (giving a model implies the learned judge)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid",
                              protected_namespaces=())

    retrieval: Retrieval = "lexical"
    judge: Judge = "lexical"
    stance_model: str | None = None
    # Model-backed skills (claimfsm.engine.model_profile; docs/models.md): stored only
    # when set, so a profile without them reads and stores as it always did.
    planner: Planner = "rules"
    model_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    on_model_error: Literal["fallback", "fail"] = "fallback"
    max_tokens_total: int | None = Field(None, ge=0)
    review: Review = "never"
    pause_before: tuple[str, ...] = ()
    pause_after: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _model_implies_learned(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("stance_model") and "judge" not in data:
            return {**data, "judge": "learned"}
        return data

    @field_validator("pause_before", "pause_after", mode="before")
    @classmethod
    def _state_list(cls, value: Any) -> Any:
        # claimfsm.toml may write pause_before = "VERIFY,AGGREGATE" as on the command line.
        if isinstance(value, str):
            return tuple(s.strip() for s in value.split(",") if s.strip())
        return value

    @model_validator(mode="after")
    def _model_iff_learned(self) -> Profile:
        if self.judge == "learned" and not self.stance_model:
            raise ValueError("judge 'learned' needs stance_model (a file from claimfsm train)")
        if self.judge != "learned" and self.stance_model:
            raise ValueError(f"stance_model is set but judge is {self.judge!r}")
        check_model(self)
        return self

    @classmethod
    def default(cls) -> Profile:
        """``Profile()``, built without compiling the validator (the hot path of every
        command: the defaults are valid by definition)."""
        return cls.model_construct()

    @property
    def is_default(self) -> bool:
        """Whether this is the profile that installs without heavy extras."""
        return self == Profile.default()

    def to_dict(self) -> dict[str, Any]:
        """``model_dump()``, without building the serializer: every field is a ``str`` or
        ``None``, which dumps as itself (a test keeps the two equal); the model and people
        options only when set (pause points as lists)."""
        out: dict[str, Any] = {name: getattr(self, name)
                               for name in ("retrieval", "judge", "stance_model")}
        fields = type(self).model_fields
        out.update({k: getattr(self, k) for k in MODEL_KEYS
                    if getattr(self, k) != fields[k].default})
        for name in _PEOPLE:
            value = getattr(self, name)
            if value and value != "never":
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def config(self) -> dict[str, Any]:
        """Session-config entries: ``profile``, the :data:`RUN_CONFIG` settings and, for the
        learned judge, ``stance_model`` (the key the VERIFY and AGGREGATE bindings read);
        pause points as ``pause_before``/``pause_after`` (the keys the driver reads)."""
        out: dict[str, Any] = {"profile": self.to_dict(), **RUN_CONFIG}
        if self.stance_model is not None:
            out["stance_model"] = self.stance_model
        for key in ("pause_before", "pause_after"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        return {**out, **model_config(self)}

    def describe(self) -> str:
        """One line for people: ``retrieval hybrid, judge learned (model.npz)``."""
        judge = f"learned ({self.stance_model})" if self.judge == "learned" else self.judge
        planner = f", planner {self.planner}" if self.planner != "rules" else ""
        via = f" (model {self.model})" if "model" in (self.judge, self.planner) else ""
        out = f"retrieval {self.retrieval}, judge {judge}{planner}{via}"
        if self.review != "never":
            out += f", review {self.review}"
        for key in ("pause_before", "pause_after"):
            if getattr(self, key):
                out += f", {key.replace('_', ' ')} {','.join(getattr(self, key))}"
        return out


def _plain(values: Mapping[str, Any]) -> Profile | None:
    """The profile of ``values`` when they are plainly valid (known keys, exact ``str``
    values validation keeps as they are, a model exactly with the learned judge), built
    without the validator; ``None`` sends them through it. Compiling a model's validator
    costs a command ~15 ms of start-up (pydantic's plugin loader imports
    ``importlib.metadata`` on the first one), and ``show`` needs no other."""
    if type(values) is not dict or any(k in values for k in (*MODEL_KEYS, *_PEOPLE)):
        return None
    retrieval = values.get("retrieval", "lexical")
    judge = values.get("judge", "lexical")
    model = values.get("stance_model")
    if (type(retrieval) is not str or retrieval not in ("lexical", "hybrid")
            or type(judge) is not str or (model is not None and type(model) is not str)):
        return None
    lexical = judge == "lexical" and model is None
    # The before-validator adds the judge a model implies: only a given one is plain.
    learned = judge == "learned" and bool(model) and "judge" in values
    return Profile.model_construct(**values) if lexical or learned else None


def _build(values: Mapping[str, Any], where: str) -> Profile:
    unknown = sorted(set(values) - set(PROFILE_KEYS))
    if unknown:
        raise ProfileError(f"{where}: unknown key {unknown[0]!r} (known: "
                           f"{', '.join(PROFILE_KEYS)})", field=unknown[0])
    plain = _plain(values)
    if plain is not None:
        return plain
    try:
        return Profile.model_validate(dict(values))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "profile"
        msg = err["msg"].removeprefix("Value error, ")
        raise ProfileError(f"{where}: {field}: {msg}", field=field) from None


def stored_profile(config: Mapping[str, Any]) -> Profile | None:
    """The profile a session's config holds under ``"profile"``, typed; ``None`` for a
    session from before profiles, or one whose stored value is no valid profile (it then
    runs as one from before profiles). Read on every step: what :meth:`Profile.config`
    wrote is built without the validator."""
    stored = config.get("profile")
    if not isinstance(stored, Mapping):
        return None
    try:
        return _build(stored, "session config profile")
    except ProfileError:
        return None


def profile_of(config: Mapping[str, Any]) -> Profile:
    """The profile a session runs with, from its config. Sessions from before profiles
    existed carry at most ``stance_model``; they read as that (lexical retrieval)."""
    stored = config.get("profile")
    if isinstance(stored, Mapping):
        return _build(stored, "session config profile")
    model = config.get("stance_model")
    return Profile(judge="learned", stance_model=str(model)) if model else Profile.default()


def find_config(cwd: Path) -> tuple[Path, dict[str, Any]] | None:
    """The config file of ``cwd`` and its profile table: ``claimfsm.toml`` (top level), or
    ``[tool.claimfsm]`` of ``pyproject.toml``; ``None`` when neither sets one."""
    for name, table in ((CONFIG_FILE, ()), ("pyproject.toml", ("tool", "claimfsm"))):
        path = cwd / name
        if not path.is_file():
            continue
        import tomllib  # only when there is a file to parse: show and step never get here

        try:
            data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ProfileError(f"{name}: not readable TOML: {exc}", code="BAD_CONFIG",
                               field=name) from None
        for key in table:
            data = data.get(key) if isinstance(data, dict) else None
        if data is None:
            continue
        if not isinstance(data, dict):
            raise ProfileError(f"{name}: [{'.'.join(table)}] must be a table",
                               code="BAD_CONFIG", field=".".join(table))
        return path, data
    return None


def resolve_profile(
    options: Mapping[str, Any] | None = None, *, cwd: Path | None = None,
    use_config: bool = True,
) -> Profile:
    """Options (``None`` values mean unset) over the config file over the defaults.

    A relative ``stance_model`` in a config file is relative to that file's folder; the
    model file must exist (the learned judge loads it when the session starts).
    """
    values: dict[str, Any] = {}
    where = "options"
    found = find_config(cwd or Path.cwd()) if use_config else None
    if found is not None:
        path, table = found
        # [sources.*] is engine.sources', [ui] is claimfsm ui's (allowed_hosts).
        table = {k: v for k, v in table.items() if k not in ("sources", "ui")}
        _build(table, path.name)  # report a bad file as the file, not as the merge
        values.update(table)
        if isinstance(values.get("stance_model"), str):
            values["stance_model"] = str(path.parent / values["stance_model"])
        where = f"options and {path.name}"
    given = {k: v for k, v in (options or {}).items() if v is not None}
    if given.get("stance_model") is not None:
        given["stance_model"] = str(given["stance_model"])
        given.setdefault("judge", "learned")
    if given.get("judge") == "lexical":
        values.pop("stance_model", None)
        given.pop("stance_model", None)
    values.update(given)
    if values.get("judge") == "learned" and "stance_model" not in values:
        raise ProfileError(f"{where}: stance_model: judge 'learned' needs a model file "
                           "(--stance-model PATH)", field="stance_model")
    profile = _build(values, where)
    if profile.stance_model is not None and not _is_file(profile.stance_model):
        raise ProfileError(f"stance_model: no file {str(profile.stance_model)[:200]}",
                           code="MODEL_NOT_FOUND", field="stance_model")
    return profile


def _is_file(path: str | Path) -> bool:
    # A name the file system refuses outright (too long, a NUL byte) names no file: the
    # same answer as a missing one, not an OSError.
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False
