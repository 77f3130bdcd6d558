"""How the demo's sample source writes a source's files: the hook a declaration fills (``SourceSpec.sample``).

The demo's city (in ``taxi_demo``, which the product never imports) tells a source what happened in a month: its
trips in any TLC layout, its weather by county, and a random stream of the source's own. The source's hook writes
its files from that, in its own format, so a new source brings its sample with it and the demo is not edited. A
month written before a source was registered gains that source's files.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from forecast_assets.sources.tlc_format import TripLayout


class SampleCity(Protocol):
    """What the demo's city did, for a source's sample to be written from."""

    def trips(self, month: str, layout: TripLayout) -> pa.Table:
        """The month's trips of ``layout``'s service, in the schema TLC published for the month's year."""
        ...

    def weather(self, month: str) -> pd.DataFrame:
        """Each day's weather by county: ``county_fips``, ``county`` (its name), ``date``, then ``prcp`` (mm) and
        ``tavg``, ``tmin``, ``tmax`` (degrees C); the five boroughs' counties and some around them."""
        ...

    def random(self, month: str, stream: int) -> np.random.Generator:
        """A random stream for the month, the same on every run of one seed; give each source a ``stream`` of its
        own, so its draws change no other source's files."""
        ...


# A source's files for a month (None: a source published once) by their path below its base URL.
WriteSample = Callable[[SampleCity, str | None], Mapping[str, bytes]]


@dataclass(frozen=True)
class SourceSample:
    """Where below the sample's root a source's files are written (the public URL's folder, which its base URL
    names), and how they are written."""

    folder: str
    files: WriteSample


def parquet_bytes(table: pa.Table) -> bytes:
    """A table as a Parquet file, compressed as TLC's are."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()
