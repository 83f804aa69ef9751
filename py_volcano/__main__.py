"""`python -m py_volcano`: the same command line as `py-volcano`."""

from py_volcano.cli import run

run()
