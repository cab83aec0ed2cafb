"""Timing fairness: whether a slow figure was the machine's fault (alone, machine, starvation)."""
