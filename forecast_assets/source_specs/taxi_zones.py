"""TLC's taxi zone lookup: one CSV naming each pickup zone's borough, zone and service zone.

TLC publishes it at one address for all months and replaces it when zones change, so it is ingested
whole (not by month), and the table is swapped whole once the new file passes its audits.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from forecast_assets.audits import (
    WARN,
    Audit,
    AuditResult,
    Measured,
    MonthFacts,
    counted_warning,
    listed,
    no_duplicate_keys,
    no_null_keys,
    row_count_matches_source,
)
from forecast_assets.lakehouse.tables import TableSpec
from forecast_assets.lakehouse.zone_reference import published_lookup_and_trips
from forecast_assets.source_specs.sample import SampleCity, SourceSample
from forecast_assets.source_specs.spec import FileFacts, SourceFile, SourceRows, SourceSpec, StagedFiles
from forecast_assets.sources.download import SourceInvalid
from forecast_assets.sources.verify import HTML_STARTS
from taxi_core.months import MonthWindow
from taxi_core.zones import ZONE_LOOKUP

ZONE_FILE = "taxi_zone_lookup.csv"
# The file's columns as TLC names them, and the table's names for them.
COLUMNS = {"LocationID": "location_id", "Borough": "borough", "Zone": "zone", "service_zone": "service_zone"}
# Every borough TLC's lookup has named: the five, Newark airport, and the two zones of unknown location.
BYTE_ORDER_MARK = "\ufeff"
KNOWN_BOROUGHS = ("Bronx", "Brooklyn", "Manhattan", "Queens", "Staten Island", "EWR", "Unknown", "N/A")

# The folder of the public URL the files sit in: the sample's folder for them.
SAMPLE_FOLDER = "misc"

TAXI_ZONES = TableSpec(
    name="taxi_zones",
    columns={
        "location_id": "int",
        "borough": "string",
        "zone": "string",
        "service_zone": "string",
        "source_file": "string",
        "source_fingerprint": "string",
    },
    descriptions={
        "location_id": "TLC taxi zone id, as trips name it (pulocationid, dolocationid)",
        "borough": "The borough the zone lies in (EWR: Newark airport; Unknown and N/A: no known location)",
        "zone": "The zone's name",
        "service_zone": "TLC service zone: Yellow Zone, Boro Zone, Airports or EWR",
        "source_file": "The TLC zone lookup file the row was read from",
        "source_fingerprint": "sha256 of that file as staged: the file version the lineage names",
    },
)


def _files(month: str | None) -> tuple[SourceFile, ...]:
    return (SourceFile("zones", ZONE_FILE),)


def _verify(path: Path, url: str, file: SourceFile, window: MonthWindow | None) -> FileFacts:
    """The file is TLC's zone lookup: a CSV with its four columns and one row per zone id."""
    where = f"{path.name} from {url}"
    data = path.read_bytes()
    if data.lstrip()[:512].lower().startswith(HTML_STARTS):
        msg = (
            f"{where} is an HTML page, not TLC's zone lookup CSV: the server answered with a web page (an error or "
            f"login page), or the file was saved from a browser. Check {SOURCE.base_url_variable}, or save the CSV "
            "itself (the 'Taxi Zone Lookup Table' link on TLC's trip record page)."
        )
        raise SourceInvalid(msg)
    try:
        # "utf-8-sig": a lookup saved by a spreadsheet starts with a byte-order mark, which is not part of its header.
        rows = csv.DictReader(io.StringIO(data.decode("utf-8-sig")))
    except UnicodeDecodeError as err:
        raise SourceInvalid(f"{where} is not UTF-8 text, so not TLC's zone lookup CSV; download it again") from err
    header = rows.fieldnames or []
    missing = [name for name in COLUMNS if name not in header]
    if missing:
        msg = (
            f"{where} has no column {', '.join(missing)} (its header is {', '.join(header) or 'empty'}): TLC's zone "
            f"lookup has {', '.join(COLUMNS)}. Check the file, or map a new layout in {__name__.replace('.', '/')}.py"
        )
        raise SourceInvalid(msg)
    first_line: dict[int, int] = {}
    boroughs: set[str] = set()
    for row in rows:
        location_id = (row["LocationID"] or "").strip()
        if not location_id.isdigit():
            msg = f"{where} line {rows.line_num} has LocationID {location_id!r}, not a zone number: download it again"
            raise SourceInvalid(msg)
        zone = int(location_id)
        if zone in first_line:
            msg = (
                f"{where} has two rows for LocationID {zone} (lines {first_line[zone]} and {rows.line_num}): a zone "
                "id names one zone, so the file is damaged or changed. Download it again, and report it to TLC if "
                "it persists."
            )
            raise SourceInvalid(msg)
        first_line[zone] = rows.line_num
        boroughs.add(row["Borough"] or "")
    if not first_line:
        raise SourceInvalid(f"{where} has a header but no zones: download it again")
    return FileFacts(len(first_line), metadata={"zones": len(first_line), "boroughs": ", ".join(sorted(boroughs))})


def _read(spark: SparkSession, staged: StagedFiles) -> SourceRows:
    # Every column as text, by its header name: the audits, not a parse, judge the values.
    csv_rows = spark.read.options(header="true", mode="FAILFAST").csv(list(staged.paths))
    # Spark keeps a byte-order mark in the first column's name, where verify has already accepted it.
    csv_rows = csv_rows.toDF(*(name.lstrip(BYTE_ORDER_MARK) for name in csv_rows.columns))
    zones = csv_rows.select(
        *(F.col(f"`{name}`").cast(TAXI_ZONES.columns[column]).alias(column) for name, column in COLUMNS.items()),
        F.lit(staged.file_names).alias("source_file"),
        F.lit(staged.fingerprints).alias("source_fingerprint"),
    )
    return SourceRows(zones, csv_rows)


LOOKUP_IDS = "lookup_zone_ids"


def _lookup_ids(facts: MonthFacts) -> Mapping[str, Column]:
    return {LOOKUP_IDS: F.collect_set("location_id")}  # a few hundred ids


def _keeps_every_zone_in_use(measured: Measured, facts: MonthFacts) -> AuditResult:
    """A zone published trips name may not leave the lookup; a zone no trip names may, with a warning."""
    reference = facts.zones
    if reference is None:
        return AuditResult(passed=True, metadata={"compared_with": "nothing published"})
    lookup = {int(zone) for zone in measured.values[LOOKUP_IDS] or []}
    in_use, published = reference.trips_by_zone, reference.boroughs
    lost_in_use = sorted(zone for zone in in_use if zone not in lookup)
    lost_unused = sorted(zone for zone in published if zone not in lookup and zone not in in_use)
    added = sorted(zone for zone in lookup if zone not in published) if published else []
    trips_lost = sum(in_use[zone] for zone in lost_in_use)
    metadata = {
        "zones": len(lookup),
        "published_zones": len(published),
        "zones_in_published_trips": len(in_use),
        "zones_in_use_missing": listed(lost_in_use),
        "trips_naming_missing_zones": trips_lost,
        "zones_dropped_unused": listed(lost_unused),
        "zones_added": listed(added),
        "compared_with": reference.source,
    }
    if lost_in_use:
        description = (
            f"the lookup lacks {len(lost_in_use)} {'zone' if len(lost_in_use) == 1 else 'zones'} that "
            f"{trips_lost:,} published trips name "
            f"({listed(lost_in_use)}; it has {len(lookup)} zones, the published one {len(published)}): those trips "
            "would lose their borough and zone. Download TLC's lookup again; a zone TLC retired stays in the "
            "lookup while trips name it."
        )
        return AuditResult(passed=False, description=description, metadata=metadata)
    if lost_unused:
        description = f"the lookup drops {len(lost_unused)} zones no published trip names: {listed(lost_unused)}."
        return AuditResult(passed=False, severity=WARN, description=description, metadata=metadata)
    return AuditResult(passed=True, metadata=metadata)


AUDITS: list[Audit] = [
    row_count_matches_source("taxi_zones", "The table holds exactly as many zones as the staged lookup file."),
    Audit(
        "taxi_zones_keeps_every_zone_in_use",
        "Every zone id the published trips name (pickup or dropoff) is in the lookup; a published zone no trip "
        "names may go, with a warning; new zones are welcome.",
        True,
        _keeps_every_zone_in_use,
        _lookup_ids,
    ),
    no_null_keys("taxi_zones", ["location_id"]),
    no_duplicate_keys("taxi_zones", ["location_id"]),
    counted_warning(
        "taxi_zones_boroughs_known",
        f"Every zone lies in a borough TLC's lookup has named ({', '.join(KNOWN_BOROUGHS)}); a new one warns.",
        lambda: ~F.col("borough").isin(*KNOWN_BOROUGHS),
        "zones_in_unknown_boroughs",
        0.0,
    ),
]


def _sample(city: SampleCity, month: str | None) -> dict[str, bytes]:
    return {ZONE_FILE: ZONE_LOOKUP.read_bytes()}  # the real lookup, which the project ships


SOURCE = SourceSpec(
    name="zones",
    publisher="TLC",
    default_base_url="https://d37ci6vzurychx.cloudfront.net/misc",
    files=_files,
    verify=_verify,
    file_asset="taxi_zone_files",
    file_description="TLC's taxi zone lookup (LocationID, Borough, Zone, service_zone), checked and fingerprinted.",
    file_kind="csv",
    table=TAXI_ZONES,
    table_description="Every TLC taxi zone: its id, borough, name and service zone, as TLC's lookup publishes them.",
    read=_read,
    audits=AUDITS,
    code_version="1",
    monthly=False,
    expected_rows=lambda staged: staged.rows,
    zone_reference=published_lookup_and_trips,
    sample=SourceSample(SAMPLE_FOLDER, _sample),
)
