"""The CLI's stand-in for pydantic's plugin loader (``claimfsm.cli._skip_plugin_loader``)
answers as pydantic's loader does: no plugins while ``PYDANTIC_DISABLE_PLUGINS`` turns
them all off, pydantic's own loader (and whatever plugins it finds) otherwise. Each
case runs in a fresh interpreter: the stand-in lives in ``sys.modules``."""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROBE = """
import os, sys
import claimfsm.cli as cli
os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)
if sys.argv[1] != "unset":
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = sys.argv[1]
cli._skip_plugin_loader()
loader = sys.modules.get("pydantic.plugin._loader")
installed = loader is not None and getattr(loader, "__file__", None) is None
from pydantic import BaseModel
class M(BaseModel):
    x: int = 0
assert M(x=1).x == 1
os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)  # turned on later: pydantic's loader
from pydantic.plugin._loader import get_plugins
later = list(get_plugins())
real = sys.modules["pydantic.plugin._loader"]
print(installed, "importlib.metadata" in sys.modules, getattr(real, "__file__", None) is not None,
      later == list(real.get_plugins()))
"""


def _run(value: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, value], capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


@pytest.mark.parametrize("value", ["__all__", "1", "true"])
def test_disabled_plugins_need_no_loader_until_they_are_enabled(value: str) -> None:
    # The stand-in was installed and a model validated without importlib.metadata;
    # enabling plugins afterwards hands over to pydantic's loader, which then loads.
    assert _run(value) == ["True", "True", "True", "True"]


@pytest.mark.parametrize("value", ["unset", "logfire", ""])
def test_enabled_plugins_keep_pydantic_s_loader(value: str) -> None:
    # Any other value (none, or plugin names) may load plugins: no stand-in.
    assert _run(value) == ["False", "True", "True", "True"]


def test_the_stand_in_answers_no_plugins_while_disabled() -> None:
    probe = """
import os, sys
import claimfsm.cli as cli
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
cli._skip_plugin_loader()
from pydantic.plugin._loader import get_plugins
import importlib.util
spec = importlib.util.find_spec("pydantic.plugin._loader")  # a module with a spec, as any
print(tuple(get_plugins()) == (), "importlib.metadata" in sys.modules, spec is not None)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["True", "False", "True"]


def test_other_names_hand_over_to_pydantic_s_loader() -> None:
    probe = """
import os, sys
import claimfsm.cli as cli
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
cli._skip_plugin_loader()
stand_in = sys.modules["pydantic.plugin._loader"]
assert not hasattr(stand_in, "__file__") and "importlib.metadata" not in sys.modules
from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP
real = sys.modules["pydantic.plugin._loader"]
print(PYDANTIC_ENTRY_POINT_GROUP, real is not stand_in, hasattr(real, "__file__"),
      tuple(real.get_plugins()) == ())
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.stdout.split() == ["pydantic", "True", "True", "True"], out.stderr[-2000:]
