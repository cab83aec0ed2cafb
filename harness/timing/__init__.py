"""Timing fairness: whether a figure, or a step that ran out of budget, was the machine's doing.

One question, one policy (``fault``): a step that overran while the harness paused the agent,
the kernel kept it from a CPU, or the fake server played its script late is ``not exercised``
(then retried), never a verdict. The measurements behind it:

- ``alone`` — task runs side by side (``--jobs``): a latency is timed while every other run is
  paused, and a sample timed beside another is kept apart (``concurrent``);
- ``starvation`` — the kernel's per-thread counters of time run and time waited for a CPU;
- ``machine`` — what a null agent costs on this machine, recorded with every run so that an
  absolute limit (C3, C8) can be read against it.

The stopwatch's own error and floor are measured by ``harness.calibrate`` (``stopbench
calibrate``, and a one-second floor in every run's header); the reports put them beside each
latency.
"""
