"""What the command line says to a person: plurals, counts, shortened ids, summed-up lists, lines that fit."""

from collections import Counter

import pytest

from bridge.cli.commands import pass_lines
from bridge.config import LineageBridge
from bridge.run.lineage_pass import PassResult, summary
from bridge.sinks.drain import DrainResult
from bridge.translate.naming import IcebergTables, Naming
from bridge.wording import WIDTH, counts, fitted, listed, matching, plural, short, when

SHA = "sha256:0d540a33dd1f6c5595ffdb60795ab29295095c916c3a291b929891e19ae34fc1"


@pytest.mark.parametrize(
    ("count", "noun", "many", "said"),
    [
        (0, "run", None, "0 runs"),
        (1, "Metaflow run", None, "1 Metaflow run"),
        (2, "Metaflow run", None, "2 Metaflow runs"),
        (1, "pass", "passes", "1 pass"),
        (3, "pass", "passes", "3 passes"),
        (1234, "row", None, "1,234 rows"),
    ],
)
def test_a_count_has_the_plural_it_needs(count, noun, many, said):
    assert plural(count, noun, many) == said


def test_event_types_are_counted_in_the_order_a_run_goes():
    assert counts(Counter({"COMPLETE": 31, "START": 31})) == "31 START, 31 COMPLETE"
    assert counts({"OTHER": 2, "FAIL": 1, "START": 3}) == "3 START, 1 FAIL, 2 OTHER"
    assert counts({}) == "none"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (SHA, "sha256:0d540a33dd1f…"),
        ("9088940967552739907", "908894096755…"),
        ("e4b7f551-d848-423d-a353-b77e33fc0473", "e4b7f551-d84…"),
        ("4752240692", "4752240692"),
    ],
)
def test_a_long_id_keeps_its_first_twelve_characters(value, shown):
    assert short(value) == shown


def test_a_shortened_id_finds_its_whole_value_and_only_one():
    known = ["9088940967552739907", "9088940967550000000", SHA]
    assert matching(short(SHA), known) == SHA
    assert matching("9088940967552739907", known) == "9088940967552739907"
    assert matching("908894096755…", known) is None  # two start so: ambiguous
    assert matching("1234", known) is None
    assert matching("9088", ["9088940967552739907"]) is None  # too short to be more than chance


def test_a_long_list_is_its_first_and_last_and_how_many():
    days = [f"day_{day:02d}" for day in range(1, 32)]
    assert listed(days, "column") == "day_01 … day_31 (31 columns)"
    assert listed(["month", "year"], "column") == "month, year"


def test_an_event_time_reads_to_the_second():
    assert when("2026-11-27T02:18:46.701Z") == "2026-11-27 02:18:46Z"
    assert when("2026-11-27T02:18:46+00:00") == "2026-11-27 02:18:46Z"


def test_a_long_line_wraps_under_its_own_text():
    line = "        <- " + " ".join(["monthly_ingestion.nyc_taxi__raw_yellow"] * 6)
    wrapped = fitted([line])
    assert len(wrapped) > 1 and all(len(part) <= WIDTH for part in wrapped)
    assert wrapped[0].startswith("        <- ") and wrapped[1].startswith(" " * 15)
    assert " ".join(part.strip() for part in wrapped) == line.strip()


def _bridge(tmp_path) -> LineageBridge:
    return LineageBridge(Naming(tables=IcebergTables(f"file://{tmp_path}")), tmp_path, repair_command="lineage")


def test_a_pass_says_its_counts_in_words(tmp_path):
    result = PassResult(
        queued={"dagster": 42, "metaflow": 20},
        event_types=Counter({"START": 31, "COMPLETE": 31}),
        sinks={"openlineage": DrainResult("openlineage", "file events.jsonl", sent=62, dead_letters=1)},
        reported=["TrainForecastModelFlow/1"],
        untranslated=[7],
    )
    printed = "\n".join(pass_lines(result, _bridge(tmp_path)))
    assert printed.startswith("Lineage pass: 62 new events (31 START, 31 COMPLETE) in 0.0 s\n")
    assert "  per source: 42 from dagster, 20 from metaflow\n" in printed
    assert "reported 1 Metaflow run made outside Dagster" in printed and "  1 Dagster record could not" in printed
    assert "{" not in printed and "[" not in printed
    said = summary(result)
    assert said.startswith("queued 62 new events (31 START, 31 COMPLETE); ") and "1 Metaflow run made" in said
    one = PassResult(queued={"dagster": 1}, event_types=Counter({"START": 1}))
    assert pass_lines(one, _bridge(tmp_path))[0].startswith("Lineage pass: 1 new event (1 START) in ")
