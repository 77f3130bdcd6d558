"""Pictures of a training run as PNG bytes: forecast against actuals, and backtest error per candidate."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from PIL import Image as PILImage  # noqa: E402

from flows.forecasting.alarms import BIAS_RANGE, COVERAGE_RANGE, HealthyRanges  # noqa: E402
from flows.forecasting.backtest import ranked  # noqa: E402
from flows.forecasting.selection import RANGE_COLUMN  # noqa: E402

HISTORY_DAYS = 7
# 1,000 px wide: whole in Dagster's Markdown dialog (1,120 px, about 1,080 inside) on a 1,400 px laptop screen,
# and in a Metaflow card, which shows an image at most 500 px high (its CSS: img {max-width: 100%;
# max-height: 500px}): a figure more than twice as wide as high is never shrunk there. At 100 dpi a point
# is 1.4 px, so 9-10 pt text is read at its size, not scaled down. None is over 500 px high.
PNG_DPI = 100
PNG_WIDTH = 1000
WIDE_FIGURE = (PNG_WIDTH / PNG_DPI, 3.8)
FORECAST_FIGURE = (PNG_WIDTH / PNG_DPI, 5.0)
PNG_COLOURS = 64
# Room above the tallest bar for a legend inside the axes.
LEGEND_HEADROOM = 1.3


def forecast_figure(actuals: pd.DataFrame, held_out: pd.DataFrame, forecast: pd.DataFrame, zones: int = 4) -> Figure:
    """One panel per busy zone, two panels a row: the last week's actuals, the held-out forecasts and the
    forecast, each with its 80% and 95% intervals."""
    names = forecast.drop_duplicates("pulocationid").set_index("pulocationid")
    busiest = list(actuals.groupby("pulocationid").total_rides.sum().nlargest(zones).index)
    start = forecast.pickup_hour.min() - pd.Timedelta(days=HISTORY_DAYS)
    rows = math.ceil(len(busiest) / 2)
    width, height = FORECAST_FIGURE
    figure, axes = plt.subplots(rows, 2, figsize=(width, height * rows / 2), sharex=True, squeeze=False)
    for axis, zone in zip(axes.flat, busiest, strict=False):
        seen = actuals[(actuals.pulocationid == zone) & (actuals.pickup_hour >= start)]
        tested = held_out[(held_out.pulocationid == zone) & (held_out.pickup_hour >= start)]
        ahead = forecast[forecast.pulocationid == zone]
        for rows, colour in ((tested, "tab:blue"), (ahead, "tab:red")):
            axis.fill_between(rows.pickup_hour, rows.lower_95, rows.upper_95, color=colour, alpha=0.12, linewidth=0)
            axis.fill_between(rows.pickup_hour, rows.lower_80, rows.upper_80, color=colour, alpha=0.22, linewidth=0)
        axis.plot(seen.pickup_hour, seen.total_rides, color="black", linewidth=0.9, label="actual rides")
        axis.plot(tested.pickup_hour, tested.predicted, color="tab:blue", linewidth=0.9, label="held-out forecast")
        axis.plot(ahead.pickup_hour, ahead.forecasted_total_rides, color="tab:red", linewidth=1.5,
                  label="forecast (bands: 80% and 95%)")  # fmt: skip
        title = f"zone {zone}: {names.zone.get(zone) or '?'} ({names.borough.get(zone) or '?'})"
        axis.set_title(title, fontsize=10, loc="left")
        axis.set_ylabel("rides / hour", fontsize=9)
        axis.xaxis.set_major_formatter(mdates.ConciseDateFormatter(axis.xaxis.get_major_locator()))
        axis.tick_params(labelsize=9)
        axis.grid(alpha=0.3)
    for axis in list(axes.flat)[len(busiest) :]:
        axis.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    # Below the panels, where it never covers a line and stays inside the image at any width.
    figure.legend(handles, labels, loc="lower center", ncols=3, fontsize=9, frameon=False)
    figure.suptitle(f"Forecast from {forecast.pickup_hour.min():%Y-%m-%d %H:%M}", x=0.01, ha="left", fontsize=11)
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    return figure


def held_out_figure(weeks: pd.DataFrame) -> Figure:
    """Each held-out week's champion MAE as a share of seasonal naive's, with its bootstrap range."""
    figure, axis = plt.subplots(figsize=WIDE_FIGURE)
    ratios = weeks["MAE / naive"].astype(float)
    ranges = weeks[RANGE_COLUMN].str.split("-", expand=True).astype(float)
    positions = range(len(weeks))
    axis.bar(positions, ratios, color="tab:blue", width=0.6, label="champion MAE / seasonal naive MAE")
    axis.errorbar(positions, ratios, yerr=[ratios - ranges[0], ranges[1] - ratios], fmt="none", ecolor="black",
                  capsize=4, label="90% bootstrap range (zone-days resampled)")  # fmt: skip
    axis.axhline(1.0, color="tab:gray", linestyle="--", linewidth=1, label="as good as naive")
    labels = [f"{week}\n{champion}" for week, champion in zip(weeks["held-out week"], weeks["champion"], strict=True)]
    axis.set_xticks(list(positions), labels, fontsize=9)
    axis.set_ylabel("MAE / naive MAE")
    axis.set_ylim(0, max(1.0, float(ranges[1].max())) * LEGEND_HEADROOM)
    axis.set_title("Held-out weeks: each champion chosen on the weeks before it", fontsize=11, loc="left")
    axis.legend(fontsize=9, loc="upper left", ncols=3)
    axis.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return figure


def backtest_figure(metrics: pd.DataFrame, floor: Mapping[str, float] | None) -> Figure:
    """MAE and RMSE per candidate, best first, with the noise floor when the sample's true rates are known."""
    ordered = ranked(metrics)
    figure, axis = plt.subplots(figsize=WIDE_FIGURE)
    positions = range(len(ordered))
    axis.bar([p - 0.2 for p in positions], ordered.mae, width=0.4, label="MAE", color="tab:blue")
    axis.bar([p + 0.2 for p in positions], ordered.rmse, width=0.4, label="RMSE", color="tab:gray")
    if floor:
        axis.axhline(floor["mae"], color="tab:red", linestyle="--", linewidth=1, label="noise floor MAE")
    axis.set_xticks(list(positions), ordered.candidate, fontsize=10)
    axis.set_ylabel("rides / hour")
    axis.set_ylim(0, float(ordered.rmse.max()) * LEGEND_HEADROOM)
    axis.set_title("Backtest error per candidate (rolling origin), best first", fontsize=11, loc="left")
    axis.legend(fontsize=9, loc="upper left", ncols=3)
    axis.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return figure


def png_bytes(figure: Figure) -> bytes:
    """The figure as a PNG, and the figure closed (a flow draws several; pyplot keeps every open one)."""
    drawn = io.BytesIO()
    figure.savefig(drawn, format="png", dpi=PNG_DPI)
    plt.close(figure)
    # The PNG goes into a card, an artifact and a Dagster materialization; a 64-colour palette keeps
    # line charts as sharp at a third of the size.
    palette = io.BytesIO()
    PILImage.open(drawn).convert("RGB").quantize(colors=PNG_COLOURS).save(palette, format="png", optimize=True)
    return palette.getvalue()


def save_png(png: bytes, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path


def accuracy_figure(days: pd.DataFrame, healthy: HealthyRanges | None = None) -> Figure:
    """Each scored day: the zones' MAE against seasonal naive's, the city's bias against its alarm's range, and the
    share of each level's hours inside their 80% intervals (zones, borough totals, the city) against the zone
    alarm's range (``healthy``: the serving version's; the fixed defaults without one).

    ``days``: ``day, zone_ratio_to_naive, city_bias_pct, zone_coverage_80_pct, borough_totals_coverage_80_pct,
    city_coverage_80_pct``, one row per day."""
    figure, (ratio, bias, coverage) = plt.subplots(3, 1, figsize=(WIDE_FIGURE[0], 7), sharex=True)
    when = pd.to_datetime(days.day)
    ratio.plot(when, days.zone_ratio_to_naive, marker="o", color="tab:blue")
    ratio.axhline(1.0, color="tab:gray", linestyle="--", linewidth=1, label="as good as naive")
    ratio.set_ylabel("zones' MAE / naive")
    ratio.set_ylim(0, max(1.2, float(days.zone_ratio_to_naive.max()) * 1.1))
    ratio.legend(fontsize=9, loc="lower left")
    healthy = healthy or HealthyRanges()
    bias_low, bias_high = (100 * share for share in healthy.city_bias or BIAS_RANGE)
    outside = [not bias_low <= value <= bias_high for value in days.city_bias_pct]
    bias.bar(when, days.city_bias_pct, color=["tab:red" if out else "tab:blue" for out in outside])
    bias.axhspan(bias_low, bias_high, color="tab:blue", alpha=0.08)
    bias.text(0.005, 0.04, f"alarm's range {bias_low:+.0f}% to {bias_high:+.0f}%", transform=bias.transAxes, fontsize=8)
    bias.axhline(0, color="tab:gray", linewidth=1)
    bias.set_ylabel("city bias, %")
    levels = (("zone", "zones", "tab:green"), ("borough_totals", "borough totals", "tab:purple"),
              ("city", "the city", "tab:orange"))  # fmt: skip
    for column, label, color in levels:
        coverage.plot(when, days[f"{column}_coverage_80_pct"], marker="o", markersize=3, color=color, label=label)
    low, high = (100 * share for share in healthy.zone_coverage_80 or COVERAGE_RANGE)
    coverage.axhspan(low, high, color="tab:green", alpha=0.08, label=f"zone alarm's range ({low:.0f}-{high:.0f}%)")
    coverage.axhline(80, color="tab:gray", linestyle="--", linewidth=1, label="80%")
    coverage.set_ylabel("hours in 80% interval, %")
    coverage.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=5, frameon=False)
    coverage.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d"))
    for axis in (ratio, bias, coverage):
        axis.grid(axis="y", alpha=0.3)
    ratio.set_title("Forecast accuracy per day, once the day's actuals were published", fontsize=11, loc="left")
    figure.tight_layout()
    return figure
