"""Calibration of stopbench's own stopwatch (placeholder)."""
