"""claimfsm's engine and its tools.

The engine core sits at the top of this package: the machine definition and its
``transitions`` façade (``machine``), the driver that fires every move and is the only
writer of state (``driver``), skill bindings (``bindings``), per-session limits
(``limits``), errors, the public custom-machine API (``api``), the built-in engine
(``runtime``) and the JSON views (``views``). The core may import ``skills`` and
``state`` and nothing else of fsm. Its tools live in subpackages and import the core,
never the other way: ``fsm.replay`` (record/replay), ``fsm.testing`` (toolkit and pytest
plugin), ``fsm.eval`` (evaluation and training), ``fsm.bench`` (benchmark) and, on top of
them all, ``fsm.cli``. ``tests/test_layers.py`` enforces these arrows.
"""
