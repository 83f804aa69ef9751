"""Parity with the real Volcano: vc-scheduler and py-volcano play the same clusters; their decisions are compared.

Opt-in and not part of CI: every test skips unless `VOLCANO_SCHEDULER` names a vc-scheduler binary
(built from Volcano's source); docs/parity.md tells how to build and run it.
"""
