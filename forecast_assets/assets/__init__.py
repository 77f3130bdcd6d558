"""Dagster assets, grouped by what they hold: source files, raw tables, hourly actuals."""
