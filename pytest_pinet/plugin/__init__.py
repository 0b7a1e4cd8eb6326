"""The pytest layer: every module of pinet that knows pytest lives in this package.

``hooks`` is the entry point pytest loads (``pytest11``); ``engagement`` decides whether a run
uses pinet at all; ``collection`` orders and parametrizes the tests that do; ``outcomes`` turns
their reports into pinet's outcomes (planned, measured, undecided, lab fault); ``summary`` writes
what a run prints and leaves for Allure. ``options`` declares every option once,
``option_values`` parses each kind of value, ``option_sources`` finds where a value came from,
``hookspecs`` declares the hooks a lab's conftest may implement, and ``fixtures`` holds the
fixtures, one module per suite. The core rooms never import this package
(``tests/unit/test_architecture.py``).

Nothing is imported here: pytest imports ``hooks`` at every start of every suite in the
environment, and a package ``__init__`` that loaded more would cost them all.
"""
