"""The worked examples of docs/python.md and the package docstrings run as written."""

from __future__ import annotations

import doctest

import heaplab
from conftest import ROOT


def test_docs_python_md_examples_run_as_written():
    r = doctest.testfile(str(ROOT / "docs" / "python.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert r.attempted > 10 and r.failed == 0, r


def test_package_docstring_examples():
    r = doctest.testmod(heaplab, optionflags=doctest.ELLIPSIS)
    assert r.failed == 0, r


def test_every_public_name_has_a_docstring():
    for name in heaplab.__all__:
        assert getattr(heaplab, name).__doc__, name
