"""What is published at a forecast origin, and the only way the forecasting code sees its inputs.

A forecast made at an origin may use the actuals of every hour before it and the weather of every
day NOAA has published by then: a day's values come out ``weather_delay_days`` after the day ends.
:class:`Inputs` holds everything the run read; a model is fitted, and a forecast's features are
built, only from :meth:`Inputs.published_at` an origin, so no feature can carry a value published
after its origin. The one labelled exception is a hindsight scenario, which is told the target
days' observed weather and is never a forecast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from flows.forecasting import features

# NOAA updates nClimGrid-Daily's preliminary county values every 3 days (the NOAA entry of the AWS
# Open Data Registry, noaa-nclimgrid: "Daily data are updated every 3 days with a preliminary data
# file"), so a day's weather can be up to 3 days old before it is published.
NOAA_PUBLICATION_DELAY_DAYS = 3
DAY = pd.Timedelta(days=1)
# The actuals a forecast row's features reach back to: the longest lag, the recent level's week, the horizon.
FEATURE_HISTORY = pd.Timedelta(hours=max(features.CANDIDATE_LAGS) + features.LEVEL_HOURS)


@dataclass(frozen=True)
class PublicationRule:
    """When each input becomes known: weather days after the day ends; actuals at the end of their hour or,
    with ``actuals_month_delay`` set, a month at a time, that many months after the month ends (TLC's way)."""

    weather_delay_days: int = NOAA_PUBLICATION_DELAY_DAYS
    actuals_month_delay: int | None = None

    def actuals_through(self, origin: pd.Timestamp) -> pd.Timestamp:
        """The end of the actuals published at ``origin`` (excluded)."""
        if self.actuals_month_delay is None:
            return origin
        month_start = origin.to_period("M").to_timestamp()
        return min(origin, month_start - pd.DateOffset(months=self.actuals_month_delay))

    def weather_through(self, origin: pd.Timestamp) -> pd.Timestamp:
        """The newest day whose weather is published at ``origin``: it ended ``weather_delay_days`` before it."""
        return (origin - DAY * (1 + self.weather_delay_days)).normalize()

    def known_actuals(self, actuals: pd.DataFrame, origin: pd.Timestamp) -> pd.DataFrame:
        return actuals[actuals.pickup_hour < self.actuals_through(origin)]

    def known_weather(self, weather: pd.DataFrame, origin: pd.Timestamp) -> pd.DataFrame:
        return weather[weather.date <= self.weather_through(origin)]


@dataclass(frozen=True)
class Inputs:
    """Everything a run read, and the forecast's shape: which zones, how far ahead, under which rule."""

    actuals: pd.DataFrame
    weather: pd.DataFrame | None
    zones: list[int]
    horizon_hours: int
    start: pd.Timestamp
    rule: PublicationRule = PublicationRule()

    def published_at(self, origin: pd.Timestamp) -> Inputs:
        """The same inputs as they stood at ``origin``: nothing published after it is left."""
        weather = None if self.weather is None else self.rule.known_weather(self.weather, origin)
        actuals = self.rule.known_actuals(self.actuals, origin)
        return Inputs(actuals, weather, self.zones, self.horizon_hours, self.start, self.rule)

    def training_frame(self, origin: pd.Timestamp) -> tuple[pd.DataFrame, list[str]]:
        """Every hour before ``origin`` with its features and target, as published at ``origin``: what a model
        fitted then learns from."""
        known = self.published_at(origin)
        frame, names = known._features(self.start, origin, origin)
        return features.training_rows(frame, names), names

    def forecast_frame(
        self, origin: pd.Timestamp, hours: int | None = None, hindsight: bool = False
    ) -> tuple[pd.DataFrame, list[str]]:
        """The ``hours`` (default: the horizon) from ``origin``, with features from what is published at ``origin``
        only; no target. ``hindsight`` adds the target days' observed weather: a scenario's, never a forecast's."""
        end = origin + pd.Timedelta(hours=hours or self.horizon_hours)
        start = max(self.start, origin - FEATURE_HISTORY - pd.Timedelta(hours=self.horizon_hours))
        known = self.published_at(origin)
        if hindsight and self.weather is not None:
            known = Inputs(known.actuals, self.weather, self.zones, self.horizon_hours, self.start, self.rule)
        frame, names = known._features(start, end, origin)
        rows = frame[frame.pickup_hour >= origin].drop(columns=["total_rides"]).reset_index(drop=True)
        return rows, names

    def forecast_frames(
        self, origins: Sequence[pd.Timestamp], hours: int, hindsight: bool = False
    ) -> list[tuple[pd.DataFrame, list[str]]]:
        """:meth:`forecast_frame` of each of ``origins``, their features built once where that gives each origin's
        own: under end-of-hour publication, with ``hours`` no longer than the horizon and origins at one hour of
        the day, a row's lags and level reach only hours before its origin, and its known weather only days
        published by it, whatever was published later. The target days' observed weather, which no origin has
        published, stays empty unless ``hindsight``. A backtest's week costs one feature build, not seven."""
        ordered = sorted(origins)
        shared = (
            self.rule.actuals_month_delay is None
            and hours <= self.horizon_hours
            and len({origin.hour for origin in ordered}) <= 1
        )
        if not shared or len(ordered) < 2:
            return [self.forecast_frame(origin, hours, hindsight) for origin in origins]
        frame, names = self._span_frame(ordered[0], ordered[-1], hours, hindsight)
        span = pd.Timedelta(hours=hours)
        return [
            (frame[(frame.pickup_hour >= origin) & (frame.pickup_hour < origin + span)].reset_index(drop=True), names)
            for origin in origins
        ]

    def _span_frame(
        self, first: pd.Timestamp, last: pd.Timestamp, hours: int, hindsight: bool
    ) -> tuple[pd.DataFrame, list[str]]:
        """The rows from ``first`` to ``hours`` after ``last``, featured from what is published at ``last``."""
        end = last + pd.Timedelta(hours=hours)
        start = max(self.start, first - FEATURE_HISTORY - pd.Timedelta(hours=self.horizon_hours))
        known = self.published_at(last)
        if hindsight and self.weather is not None:
            known = Inputs(known.actuals, self.weather, self.zones, self.horizon_hours, self.start, self.rule)
        frame, names = known._features(start, end, first)
        rows = frame[frame.pickup_hour >= first].drop(columns=["total_rides"])
        if not hindsight:
            # No origin has published its own target days' weather: as each origin's own frame has it.
            rows = rows.assign(**{column: np.nan for column in features.PERFECT_WEATHER_FEATURES if column in rows})
        return rows, names

    def targets(self, rows: pd.DataFrame) -> pd.Series:
        """The actuals of ``rows``' hours and zones: to score, never to forecast. As in the features
        (:func:`~flows.forecasting.features.complete_grid`), a zone without a row in an hour read had no ride;
        an hour not read is NaN."""
        wanted = pd.MultiIndex.from_frame(rows[list(self._rides.index.names)])
        found = self._rides.reindex(wanted).to_numpy()
        read = rows.pickup_hour.isin(self._hours_read).to_numpy()
        return pd.Series(np.where(np.isnan(found) & read, 0.0, found), name="total_rides")

    @cached_property
    def _hours_read(self) -> pd.Index:
        hours: pd.Index = pd.Index(self.actuals.pickup_hour.unique())
        return hours

    @cached_property
    def _rides(self) -> pd.Series:
        """The actuals' rides by hour and zone, indexed once: a backtest looks up each of its days in them."""
        return self.actuals.set_index(["pickup_hour", "pulocationid"]).total_rides

    def _features(self, start: pd.Timestamp, end: pd.Timestamp, origin: pd.Timestamp) -> tuple[pd.DataFrame, list[str]]:
        grid = features.complete_grid(self.actuals, self.zones, start, end)
        lag = features.weather_lag_days(origin.hour, self.horizon_hours, self.rule.weather_delay_days)
        return features.build_features(grid, self.horizon_hours, self.weather, lag)
