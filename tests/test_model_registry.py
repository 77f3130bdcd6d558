"""Which model version serves: every decision in an Iceberg table, the serving version the newest decision's."""

import pandas as pd
import pytest
from pyiceberg.catalog import Catalog

from bridge.sources.metaflow_recorder import recording
from flows.forecasting import registry
from flows.forecasting.promotion import Decision
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.names import MODEL_PROMOTIONS


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    config = CatalogConfig(warehouse=str(tmp_path / "warehouse"), sqlite_path=str(tmp_path / "catalog.db"))
    opened = open_catalog(config)
    opened.create_namespace_if_not_exists("nyc_taxi")
    return opened


def test_the_serving_version_is_the_newest_decision_s_and_each_decision_is_kept(catalog):
    assert registry.serving_version(catalog, "forecast_model") is None
    first = Decision("Flow/1", None, True, "the first version")
    worse = Decision("Flow/2", "Flow/1", False, "Flow/1 keeps serving", 9.0, 6.0, 1.5, (1.3, 1.7), 28)
    better = Decision("Flow/3", "Flow/1", True, "Flow/3 promoted", 5.0, 6.0, 0.83, (0.78, 0.9), 28)
    served, snapshots = [], []
    for decision, champion in ((first, "seasonal_naive"), (worse, "glm"), (better, "blend")):
        with recording() as step:
            snapshots.append(
                registry.record_decision(catalog, "forecast_model", decision, champion, pd.Timestamp("2025-02-01"))
            )
            served.append(registry.serving_version(catalog, "forecast_model"))
        written, read = step.to_artifact()["writes"][0], step.to_artifact()["reads"][0]
        assert written["name"] == read["name"] == MODEL_PROMOTIONS
        assert written["version"] == read["version"] == str(snapshots[-1])
    assert served == [
        registry.Serving("Flow/1", "seasonal_naive", snapshots[0]),
        registry.Serving("Flow/1", "seasonal_naive", snapshots[1]),
        registry.Serving("Flow/3", "blend", snapshots[2]),
    ]
    history = registry.decisions(catalog, "forecast_model")
    assert history.challenger.tolist() == ["Flow/1", "Flow/2", "Flow/3"]
    assert history.promoted.tolist() == [True, False, True]
    assert history.ratio_high.iloc[1] == pytest.approx(1.7) and history.days.iloc[2] == 28
    assert registry.serving_version(catalog, "another_model") is None


def _decide(catalog, version: str, serving: str | None, promoted: bool, trained_through: str) -> None:
    decision = Decision(version, serving, promoted, f"{version} {'promoted' if promoted else 'not promoted'}")
    registry.record_decision(catalog, "forecast_model", decision, "glm", pd.Timestamp(trained_through))


def test_a_day_is_served_by_the_version_serving_at_its_start_trained_before_it(catalog):
    """A February backfill after a March version's promotion is forecast by February's version, as it was on time."""
    _decide(catalog, "Flow/feb", None, True, "2025-02-01")
    on_time = registry.serving_version_on(catalog, "forecast_model", pd.Timestamp("2025-02-10"))
    _decide(catalog, "Flow/mar", "Flow/feb", True, "2025-03-01")

    assert on_time is not None and on_time.version == "Flow/feb"
    backfilled = registry.serving_version_on(catalog, "forecast_model", pd.Timestamp("2025-02-10"))
    assert backfilled is not None and backfilled.version == on_time.version
    assert registry.serving_version_on(catalog, "forecast_model", pd.Timestamp("2025-03-01")).version == "Flow/mar"
    # Nothing was trained before January: no version may forecast it.
    assert registry.serving_version_on(catalog, "forecast_model", pd.Timestamp("2025-01-20")) is None


def test_the_registry_as_it_stood_at_a_day_s_start_decides_once_it_holds_decisions_by_then():
    decisions = pd.DataFrame(
        {
            "decided_at": pd.to_datetime(["2025-02-01 06:00", "2025-02-20 06:00"], utc=True),
            "challenger": ["Flow/a", "Flow/b"],
            "now_serving": ["Flow/a", "Flow/b"],
            "trained_through": pd.to_datetime(["2025-01-31", "2025-02-15"]),
        }
    )
    # On the 18th Flow/b's data had ended but it was promoted only on the 20th: Flow/a served that day.
    assert registry.serving_on(decisions, pd.Timestamp("2025-02-18")) == "Flow/a"
    assert registry.serving_on(decisions, pd.Timestamp("2025-02-21")) == "Flow/b"
    # A day before any decision was recorded is history replayed: the data's clock decides.
    assert registry.serving_on(decisions, pd.Timestamp("2025-01-31")) == "Flow/a"
    # A newer version that was never promoted leaves the serving one; one not yet trained cannot serve.
    kept = decisions.assign(now_serving=["Flow/a", "Flow/a"])
    assert registry.serving_on(kept, pd.Timestamp("2025-02-21")) == "Flow/a"


def test_a_registry_from_before_the_training_end_was_recorded_takes_the_new_column(catalog):
    old = [field for field in registry.PROMOTIONS_SCHEMA.fields if field.name != "trained_through"]
    from pyiceberg.schema import Schema

    catalog.create_table(MODEL_PROMOTIONS, schema=Schema(*old))
    _decide(catalog, "Flow/1", None, True, "2025-02-01")
    found = registry.decisions(catalog, "forecast_model")
    assert pd.Timestamp(found.trained_through.iloc[0]) == pd.Timestamp("2025-02-01")
