"""The front door and the lazy exports behind every package ``__init__``
(``claimfsm._base.lazy``): each public name resolves to the object its module defines,
a name that is not exported is an AttributeError (so ``hasattr`` and ``from X import Y``
behave), and importing a package loads nothing it does not need yet."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import claimfsm

PACKAGES = ("claimfsm", "claimfsm._base", "claimfsm.engine", "claimfsm.skills",
            "claimfsm.state")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_is_what_its_module_defines(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        if name == "__version__":
            continue
        value = getattr(module, name)
        home = importlib.import_module(getattr(value, "__module__", None) or package)
        assert getattr(home, name, value) is value, f"{package}.{name}"


@pytest.mark.parametrize("package", PACKAGES)
def test_a_name_that_is_not_exported_is_an_attribute_error(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
    assert not hasattr(module, "no_such_name")
    with pytest.raises(ImportError):
        exec(f"from {package} import no_such_name", {})


def test_a_resolved_name_is_cached_in_the_package() -> None:
    import claimfsm.skills as skills

    skills.__dict__.pop("Envelope", None)
    envelope = skills.Envelope  # through the lazy table, once
    assert skills.__dict__["Envelope"] is envelope


def test_the_front_door_is_the_documented_list() -> None:
    assert set(claimfsm.__all__) == {
        "ClaimFsmError", "Engine", "EngineConfig", "Envelope", "ErrorCode", "MemoryInput",
        "MemoryStore", "PostgresStore", "Profile", "SQLiteStore", "SkillContext", "Workflow",
        "__version__", "define_machine", "linear", "replay_record", "skill", "wait",
        # model-backed skills of one's own (docs/models.md)
        "ModelFailure", "ModelUse", "ask_model", "model_tools",
        # asyncio applications (docs/async.md)
        "AsyncEngine",
    }


def test_importing_claimfsm_loads_none_of_its_parts() -> None:
    probe = ("import sys, claimfsm; print(sorted(m for m in sys.modules "
             "if m.startswith('claimfsm.') and m != 'claimfsm._base' "
             "and m != 'claimfsm._base.lazy'))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"
