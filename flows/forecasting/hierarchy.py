"""Zones, their boroughs and the city as one hierarchy of series, and forecasts reconciled so its totals add up.

A borough's total is a series of its own, forecast by a model fitted on it: summing the zones' forecasts
after the fact would carry every zone's error into the total and ignore what the total's own history
says. The zone, borough and city forecasts are then reconciled (minimum trace with each series'
backtest error variance, Wickramasuriya, Athanasopoulos and Hyndman 2019, through Nixtla's
``hierarchicalforecast``): the one coherent set closest to all of them, each weighted by how well its
series is forecast, never negative.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from taxi_core.errors import PipelineError

CITY = "city"
LEVELS = ("city", "borough", "zone")
RECONCILER = "MinTraceSparse(wls_var, nonnegative)"
# hierarchicalforecast's frames: one row per series and hour.
SERIES, HOUR, VALUE = "unique_id", "ds", "y"


class ZoneWithoutBorough(ValueError, PipelineError):
    """A zone with rides is missing from the zone lookup, so no borough total can hold it."""


@dataclass(frozen=True)
class Hierarchy:
    """Which zones each borough and the city sum: the summing matrix and each level's series."""

    summing: pd.DataFrame  # hierarchicalforecast's S: a row per series, a column per zone series
    levels: dict[str, np.ndarray]

    @property
    def series(self) -> list[str]:
        return self.summing[SERIES].tolist()

    def level_of(self, series: str) -> str:
        return LEVELS[series.count("/")]


def series_name(borough: str | None = None, zone: int | None = None) -> str:
    """``city``, ``city/<borough>`` or ``city/<borough>/<zone>``."""
    parts = [CITY, *([borough] if borough is not None else []), *([str(zone)] if zone is not None else [])]
    return "/".join(parts)


def zone_of(series: str) -> int | None:
    """The zone a zone series forecasts (``None`` for a borough or the city)."""
    parts = series.split("/")
    return int(parts[2]) if len(parts) == len(LEVELS) else None


def borough_of(series: str) -> str | None:
    parts = series.split("/")
    return parts[1] if len(parts) > 1 else None


def series_frame(actuals: pd.DataFrame, boroughs: Mapping[int, str]) -> tuple[pd.DataFrame, Hierarchy]:
    """Every zone's, borough's and the city's rides per hour (``unique_id, ds, y``), and their hierarchy.

    ``actuals`` has ``pickup_hour, pulocationid, total_rides``; ``boroughs`` names each zone's borough.
    """
    from hierarchicalforecast.utils import aggregate  # imported where used: it pulls in its solvers

    check_boroughs(actuals, boroughs)
    bottom = pd.DataFrame(
        {
            CITY: CITY,
            "borough": actuals.pulocationid.map(boroughs).to_numpy(),
            "zone": actuals.pulocationid.astype(str).to_numpy(),
            HOUR: actuals.pickup_hour.to_numpy(),
            VALUE: actuals.total_rides.astype(float).to_numpy(),
        }
    )
    frame, summing, levels = aggregate(bottom, [[CITY], [CITY, "borough"], [CITY, "borough", "zone"]])
    return frame, Hierarchy(summing, {name: levels[key] for name, key in zip(LEVELS, levels, strict=True)})


def check_boroughs(actuals: pd.DataFrame, boroughs: Mapping[int, str]) -> None:
    """Every zone with rides in ``actuals`` has a borough, so a total holds it."""
    missing = sorted(set(actuals.pulocationid) - set(boroughs))
    if missing:
        raise ZoneWithoutBorough(
            f"zones {missing[:10]} have rides but are not in the zone lookup: publish the lookup again "
            "(job reference_data) so every zone has a borough"
        )


def totals(actuals: pd.DataFrame, boroughs: Mapping[int, str]) -> pd.DataFrame:
    """Each borough's and the city's rides per hour (``unique_id, ds, y``): the hierarchy's totals alone, summed
    as :func:`series_frame` sums them, without building every zone's series."""
    check_boroughs(actuals, boroughs)
    rides = actuals.total_rides.astype(float).to_numpy()
    hours = actuals.pickup_hour.to_numpy()
    borough = (CITY + "/" + actuals.pulocationid.map(boroughs)).to_numpy()
    levels = [pd.Series(rides).groupby(hours).sum().rename_axis(HOUR).reset_index(name=VALUE).assign(**{SERIES: CITY})]
    by_borough = pd.Series(rides).groupby([borough, hours]).sum().rename_axis([SERIES, HOUR]).reset_index(name=VALUE)
    return pd.concat([*levels, by_borough], ignore_index=True)[[SERIES, HOUR, VALUE]]


def reconcile(forecasts: pd.DataFrame, errors: pd.DataFrame, hierarchy: Hierarchy) -> pd.DataFrame:
    """``forecasts`` (``unique_id, ds, forecast``, every series of the hierarchy) made coherent.

    ``errors`` holds the same series' backtest forecasts with their actuals (``unique_id, ds, y, forecast``):
    each series' error variance weighs how far its forecast may move. Returns ``unique_id, ds, forecast``
    with every total equal to the sum of its zones.
    """
    # Imported where used: hierarchicalforecast pulls in its solvers, which most callers of this module never need.
    from hierarchicalforecast.core import HierarchicalReconciliation
    from hierarchicalforecast.methods import MinTraceSparse

    # The sparse solver keeps forecasts non-negative by the library's heuristic: a week of hours reconciles in well
    # under a second, where the dense one solves a quadratic programme per hour (~40 ms each, 7 s a week).
    reconciler = HierarchicalReconciliation([MinTraceSparse(method="wls_var", nonnegative=True)])
    tags = {" / ".join(LEVELS[: index + 1]): series for index, series in enumerate(hierarchy.levels.values())}
    with warnings.catch_warnings():
        # The solver converts the dense problem to sparse and says so on every call: a hint, not a fault.
        warnings.filterwarnings("ignore", message="Converted matrix", module="qpsolvers")
        reconciled: pd.DataFrame = reconciler.reconcile(
            Y_hat_df=_plain_ids(forecasts[[SERIES, HOUR, "forecast"]]),
            Y_df=_plain_ids(errors[[SERIES, HOUR, VALUE, "forecast"]]),
            S_df=hierarchy.summing,
            tags=tags,
        )
    column = next(name for name in reconciled.columns if name.startswith("forecast/"))
    return reconciled[[SERIES, HOUR]].assign(forecast=reconciled[column].clip(lower=0.0).to_numpy())


def _plain_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its series names as Python strings: the reconciler walks them one by one, which costs a third of
    its time over pandas' Arrow-backed strings."""
    return frame.assign(**{SERIES: frame[SERIES].astype(object)})
