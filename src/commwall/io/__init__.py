"""Scenario files in; results out."""
