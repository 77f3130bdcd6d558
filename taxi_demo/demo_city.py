"""The demo's city: what happened in a month (its weather, its true demand, its trips in any TLC layout), drawn
once per month and seed, for each source's sample to write its files from (``SampleCity``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from forecast_assets.sources.tlc_format import TripLayout
from taxi_core.zones import Zone, load_zones
from taxi_demo import demand_model
from taxi_demo.demand_model import DemandSpec, MonthRates
from taxi_demo.sample_trips import layout_trips

# Counties written besides the five boroughs, so the filter to NYC has something to drop; the
# Alabama code shows NOAA's leading zero.
OTHER_COUNTIES = {
    "01001": "Autauga County",
    "34003": "Bergen County",
    "34013": "Essex County",
    "34017": "Hudson County",
    "36059": "Nassau County",
    "36119": "Westchester County",
}
NYC_COUNTIES = {
    "36005": "Bronx County",
    "36047": "Kings County",
    "36061": "New York County",
    "36081": "Queens County",
    "36085": "Richmond County",
}


@dataclass
class DemoCity:
    """The city of one seed and scale; each month's weather and rates are drawn once, however many sources ask."""

    spec: DemandSpec
    zones: tuple[Zone, ...] = field(default_factory=load_zones)
    _weather: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    _rates: dict[str, MonthRates] = field(default_factory=dict, repr=False)

    def _daily_weather(self, month: str) -> pd.DataFrame:
        if month not in self._weather:
            counties = [*NYC_COUNTIES, *OTHER_COUNTIES]
            self._weather[month] = demand_model.daily_weather(month, counties, self.spec.seed)
        return self._weather[month]

    def weather(self, month: str) -> pd.DataFrame:
        weather = self._daily_weather(month)
        return weather.assign(county=weather["county_fips"].map(NYC_COUNTIES | OTHER_COUNTIES))

    def rates(self, month: str) -> MonthRates:
        """The true hourly rate of pickups per zone the month's trips are drawn from."""
        if month not in self._rates:
            self._rates[month] = demand_model.hourly_rates(month, self.zones, self._daily_weather(month), self.spec)
        return self._rates[month]

    def trips(self, month: str, layout: TripLayout) -> pa.Table:
        rates = self.rates(month)
        return layout_trips(month, self.zones, rates.hours, rates.true_rate, self.spec, layout)

    def random(self, month: str, stream: int) -> np.random.Generator:
        return demand_model.month_seed(self.spec.seed, month, stream)

    def truth(self, month: str) -> pd.DataFrame:
        return demand_model.truth_frame(self.rates(month), self.zones)
