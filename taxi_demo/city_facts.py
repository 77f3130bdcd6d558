"""The public facts about NYC yellow-taxi demand that the sample source reproduces: every parameter of the demand
process in :mod:`taxi_demo.demand_model` lives here, each with where it comes from.

A value marked *judgement* is not a published figure: it is a choice made to match what the sources describe in
words, or to fill what they leave open; the comment says what it was chosen from.
"""

from __future__ import annotations

from datetime import date

import numpy as np

# --- 1. Monthly level and slow trend -------------------------------------------------------------------------

# Rows of TLC's published yellow trip files (yellow_tripdata_YYYY-MM.parquet, the trip record data at
# https://www.nyc.gov/site/tlc/about/tlc-trip-record-data.page), counted per file in "Merge Parquet with DuckDB"
# (2025-04-07, a stored public page; 41,169,720 trips in 2024). January 2025: 3,475,226 rows (a public dbt
# project's expected count of yellow_tripdata_2025-01); February 2025: the 7.05M of January and February 2025 that
# forecast_assets/trip_audits.py cites, less January's count.
PUBLISHED_MONTHLY_TRIPS = {
    "2024-01": 2_964_624, "2024-02": 3_007_526, "2024-03": 3_582_628, "2024-04": 3_514_289,
    "2024-05": 3_723_833, "2024-06": 3_539_193, "2024-07": 3_076_903, "2024-08": 2_979_183,
    "2024-09": 3_633_030, "2024-10": 3_833_771, "2024-11": 3_646_369, "2024-12": 3_668_371,
    "2025-01": 3_475_226, "2025-02": 3_575_000,
}  # fmt: skip
# The mean month the sample's ``trips_per_month`` stands for: 2024's (41,169,720 / 12).
REFERENCE_YEAR = 2024
# Slow growth of yellow trips: TLC's commissioner told the City Council (2025-03-19) that taxi trips grew 7.5% from
# 2023 to 2024 (https://citymeetings.nyc/city-council/2025-03-19-1015-am-committee-on-transportation-and-
# infrastructure/chapter/tlc-industry-overview-and-trip-statistics). Months TLC has not published (before 2024,
# after February 2025) take 2024's month of the same name grown or shrunk at this rate from mid-2024.
ANNUAL_GROWTH = 0.075
TREND_ORIGIN = date(2024, 7, 1)

# --- 2. Zone types and their weekly shapes -------------------------------------------------------------------

# Airports, by TLC zone id (taxi_zone_lookup.csv, service_zone "Airports"/"EWR"): Newark 1, JFK 132, LaGuardia 138.
AIRPORT_ZONES = (1, 132, 138)
# Midtown and downtown office districts, where weekday evening peaks are highest (TLC Factbook, metric 11 "Daily
# average trips by time of day, day of week", https://www1.nyc.gov/site/tlc/about/fact-book.page: weekday trips
# peak 6-7 pm). Zone ids by name in TLC's lookup; the choice of zones is a judgement.
OFFICE_ZONES = (87, 88, 100, 161, 162, 163, 164, 170, 186, 209, 229, 230, 231, 233, 246, 261)
# Nightlife districts, where Friday and Saturday nights run late: East Village 79, Lower East Side 148, West
# Village 249, Greenwich Village South 114, Meatpacking/West Village West 158, Alphabet City 4 (judgement).
NIGHTLIFE_ZONES = (4, 79, 114, 148, 158, 249)

# Relative demand by hour of day, midnight first, per zone type; weekday and weekend. Judgement, shaped after the
# TLC Factbook's time-of-day chart: a 4-5 am trough about a tenth of the average hour (as
# forecast_assets/trip_calendar.py states of real files), the weekday peak at 6-7 pm.
_OFFICE_WEEKDAY = [
    0.30,
    0.16,
    0.09,
    0.06,
    0.07,
    0.16,
    0.45,
    0.95,
    1.35,
    1.30,
    1.15,
    1.15,
    1.20,
    1.20,
    1.25,
    1.35,
    1.45,
    1.75,
    2.00,
    1.80,
    1.50,
    1.30,
    1.05,
    0.65,
]
_OFFICE_WEEKEND = [
    0.70,
    0.55,
    0.40,
    0.25,
    0.12,
    0.10,
    0.15,
    0.30,
    0.50,
    0.75,
    0.95,
    1.05,
    1.10,
    1.15,
    1.15,
    1.15,
    1.15,
    1.20,
    1.25,
    1.20,
    1.10,
    1.05,
    1.00,
    0.85,
]
_NIGHTLIFE_WEEKDAY = [
    0.75,
    0.45,
    0.25,
    0.12,
    0.08,
    0.10,
    0.25,
    0.55,
    0.85,
    0.90,
    0.90,
    0.95,
    1.00,
    1.00,
    1.05,
    1.10,
    1.15,
    1.30,
    1.45,
    1.50,
    1.45,
    1.40,
    1.30,
    1.05,
]
_NIGHTLIFE_WEEKEND = [
    1.90,
    1.75,
    1.45,
    0.90,
    0.35,
    0.15,
    0.15,
    0.25,
    0.40,
    0.60,
    0.85,
    1.00,
    1.05,
    1.10,
    1.10,
    1.10,
    1.10,
    1.15,
    1.25,
    1.35,
    1.45,
    1.55,
    1.70,
    1.85,
]
_RESIDENTIAL_WEEKDAY = [
    0.40,
    0.24,
    0.15,
    0.10,
    0.11,
    0.22,
    0.55,
    1.05,
    1.30,
    1.15,
    1.00,
    1.00,
    1.05,
    1.05,
    1.10,
    1.20,
    1.25,
    1.40,
    1.50,
    1.40,
    1.25,
    1.15,
    1.00,
    0.70,
]
_RESIDENTIAL_WEEKEND = [
    0.90,
    0.75,
    0.55,
    0.35,
    0.20,
    0.15,
    0.20,
    0.35,
    0.60,
    0.85,
    1.05,
    1.15,
    1.20,
    1.20,
    1.20,
    1.20,
    1.20,
    1.20,
    1.25,
    1.20,
    1.10,
    1.05,
    1.00,
    0.95,
]
# Airport pickups follow the arrival banks: few flights land 1-5 am, a morning bank, and the heaviest from the
# afternoon to late evening (judgement, after the Port Authority's hourly arrival pattern; weekends alike).
_AIRPORT = [
    0.55,
    0.25,
    0.10,
    0.06,
    0.08,
    0.20,
    0.45,
    0.75,
    0.95,
    1.00,
    1.05,
    1.10,
    1.15,
    1.25,
    1.35,
    1.45,
    1.50,
    1.55,
    1.55,
    1.50,
    1.45,
    1.40,
    1.30,
    1.00,
]
HOUR_PROFILES = {  # type -> (weekday, weekend), each normalised to mean 1 below
    "office": (_OFFICE_WEEKDAY, _OFFICE_WEEKEND),
    "nightlife": (_NIGHTLIFE_WEEKDAY, _NIGHTLIFE_WEEKEND),
    "residential": (_RESIDENTIAL_WEEKDAY, _RESIDENTIAL_WEEKEND),
    "outer": (_RESIDENTIAL_WEEKDAY, _RESIDENTIAL_WEEKEND),
    "airport": (_AIRPORT, _AIRPORT),
}
# Day-of-week level, Monday first (judgement, after the Factbook's day-of-week chart: Thursday-Friday busiest,
# Sunday quietest in the city; airports flat, Friday and Sunday a little busier, Saturday quieter).
DAY_OF_WEEK = {
    "office": [0.95, 1.05, 1.10, 1.15, 1.10, 0.75, 0.62],
    "nightlife": [0.80, 0.85, 0.92, 1.02, 1.20, 1.30, 0.95],
    "residential": [0.93, 1.00, 1.04, 1.08, 1.08, 0.98, 0.86],
    "outer": [0.95, 1.00, 1.02, 1.05, 1.07, 1.00, 0.90],
    "airport": [1.02, 0.96, 0.96, 1.00, 1.06, 0.94, 1.06],
}
# Friday and Saturday nights: the hours after midnight belong to the night before, so Saturday and Sunday 0-3 am
# carry the weekend night profile above, and Monday-Friday 0-3 am the quieter weekday one.

# --- 3. Holidays ---------------------------------------------------------------------------------------------

# Day factors in the city (non-airport zones) and at the airports. Judgement: the project's audit notes that the
# quietest real days (Christmas, a blizzard's travel ban) keep about a third to a half of a typical day
# (forecast_assets/trip_calendar.py); Thanksgiving and Christmas are the deepest dips, Memorial Day, Labor Day and
# July 4 about a third lower, the week between Christmas and New Year quiet; the minor holidays, on which schools and
# government close and most offices open (Martin Luther King Jr. Day, Presidents' Day in the schools' winter
# recess, Juneteenth, Columbus Day, Veterans Day, Election Day), a tenth or so lower; airports busiest on the travel
# days before and after (the Wednesday before and the Sunday after Thanksgiving as the busiest; no figure was
# found for taxi pickups at the airports on those days, so all of these are judgement).
HOLIDAY_CITY = {
    "thanksgiving": 0.55, "black_friday": 0.72, "christmas_eve": 0.68, "christmas": 0.55,
    "quiet_week": 0.82, "new_years_eve": 0.88, "new_years_day": 0.66, "july_4": 0.62,
    "memorial_day": 0.68, "labor_day": 0.68,
    "mlk_day": 0.86, "presidents_day": 0.84, "juneteenth": 0.88, "columbus_day": 0.90, "veterans_day": 0.90,
    "election_day": 0.93,
}  # fmt: skip
HOLIDAY_AIRPORT = {
    "thanksgiving_eve": 1.35, "thanksgiving": 0.80, "thanksgiving_sunday": 1.40, "christmas_rush": 1.20,
    "christmas": 0.75, "new_year_return": 1.25, "holiday_friday": 1.15, "holiday_monday": 1.20,
    "long_weekend_monday": 1.08,
}  # fmt: skip
# New Year's Eve night: the hours after midnight on January 1 are far busier than a normal early morning, about as
# busy as a Saturday night's (judgement: the weekend night profile's 0-3 am is 3-5 times the weekday one's).
NEW_YEAR_NIGHT_HOURS = (0, 1, 2, 3)
NEW_YEAR_NIGHT_FACTOR = 3.5

# --- 4. Daylight saving --------------------------------------------------------------------------------------

# TLC's yellow trip data dictionary (linked from the trip record page above) defines tpep_pickup_datetime as "the
# date and time when the meter was engaged": the meter's New York wall clock, no time zone. So on the
# spring-forward day no pickup reads 02:xx, and on the fall-back day 01:xx holds two real hours.
TIME_ZONE = "America/New_York"

# --- 5. Congestion pricing -----------------------------------------------------------------------------------

CONGESTION_PRICING_START = date(2025, 1, 5)
CBD_CONGESTION_FEE = 0.75
# The Congestion Relief Zone, Manhattan south of and including 60th Street (not the FDR Drive, West Side Highway,
# or Battery Park Underpass), as TLC zone ids by name and location: every Manhattan zone whose area lies south of
# Central Park (judgement where a zone straddles 59th-60th Street: Lincoln Square 142/143 are left out, Midtown
# North 163 and Sutton Place 229 kept).
CBD_ZONES = (
    4,
    12,
    13,
    45,
    48,
    50,
    68,
    79,
    87,
    88,
    90,
    100,
    103,
    104,
    105,
    107,
    113,
    114,
    125,
    137,
    144,
    148,
    158,
    161,
    162,
    163,
    164,
    170,
    186,
    209,
    211,
    224,
    229,
    230,
    231,
    232,
    233,
    234,
    246,
    249,
    261,
)
# TLC reported yellow trips to, from and within the zone up nearly 19% year on year from 5 to 31 January 2025,
# while citywide yellow trips were up just over 17% in January (Spectrum News, 2025-03-01,
# https://spectrumnews1.com/oh/columbus/news/2025/03/01/taxi-rides-in-congestion-zone-up-in-january-compared-to-last-year);
# within the zone the first week was up 10% (511,376 against 461,821 trips, Jan 5-12;
# https://www.blackcarnews.com/article/yellow-cabs-see-spike-in-trips-in-congestion-zone). Taxi demand in the zone
# rose, it did not fall (vehicle entries fell 7.5%, but taxis pay only the $0.75 per trip). The year-on-year
# figures mix the city's growth with the toll's effect; relative to the rest of the city the zone gained
# 1.19/1.17 = +1.7%, the first week about +3% over the 7.5% yearly growth: judgement, +3% on CBD pickups.
CBD_DEMAND_CHANGE = 0.03

# --- 6. Weather ----------------------------------------------------------------------------------------------

# NOAA 1991-2020 normals for Central Park (station USW00094728), as tabulated in Wikipedia's "Climate of New York
# City" climate box (stored copy of the revision of 2021-05-04 adding the 1991-2020 normals; daily mean Jan 33.7
# F (0.9 C), Feb 35.9 F (2.2 C), Mar 42.8 F (6.0 C) read there; the other months' values are NOAA's normals as that
# table lists them). Daily mean temperature (C), precipitation (mm) and days with at least 0.01 in, by month.
NORMAL_TAVG_C = np.array([0.9, 2.2, 6.0, 12.1, 17.3, 22.2, 25.3, 24.5, 20.7, 14.4, 8.9, 3.9])
NORMAL_PRCP_MM = np.array([92.5, 81.0, 109.0, 103.9, 100.6, 115.3, 116.8, 115.8, 109.5, 111.3, 90.9, 111.3])
NORMAL_WET_DAYS = np.array([10.8, 10.0, 11.1, 11.4, 11.5, 10.9, 10.4, 10.0, 8.8, 9.5, 9.2, 11.4])
# Day-to-day temperature anomaly: an AR(1) with this persistence and spread (judgement: NYC's daily mean departs
# from normal by about 3.5 C, and warm or cold spells last a few days). Computed from a fixed origin, so a month's
# weather does not depend on which other months are written.
ANOMALY_PERSISTENCE = 0.7
ANOMALY_SD_C = 3.5
WEATHER_ORIGIN = date(2015, 1, 1)
# Diurnal range: tmax - tmin about 8 C in Central Park (Jan 39.5/27.9 F, Jul 84.9/69.8 F in the same table).
DIURNAL_RANGE_C = 8.0

# Rain lifts taxi demand ("it's too nice out to take a cab": taxi use rises with rain, strongest in Manhattan;
# https://sophiewagner7.github.io/its-too-nice-out-to-take-a-cab/results): +3% per mm up to +30% in Manhattan
# (judgement), scaled by the zone's response below.
RAIN_EFFECT_PER_MM = 0.03
RAIN_EFFECT_CAP = 0.30
RAIN_RESPONSE = {"Manhattan": 1.0, "Brooklyn": 0.3, "Queens": 0.3, "Bronx": 0.25, "Staten Island": 0.2}
# Snow (precipitation on a day below 0 C): light snow lifts demand like rain, heavy snow cuts it everywhere,
# airports too (cancelled flights). Judgement: up to 8 mm of water a lift, from 15 mm a cut growing to -35% at
# 40 mm. Only a travel ban cuts deeper (the project's audit notes one leaves about a third of a day; New York
# declared two in 2015-2016); the sample draws no travel ban.
SNOW_LIGHT_MM = 8.0
SNOW_HEAVY_MM = 15.0
SNOW_CUT_FULL_MM = 40.0
SNOW_CUT_MAX = 0.35
# Cold lifts demand a little: +1% per degree of daily mean below 5 C (judgement).
COLD_THRESHOLD_C = 5.0
COLD_EFFECT_PER_DEGREE = 0.01

# --- 7. Events and shocks ------------------------------------------------------------------------------------

# Arenas and stadiums by TLC zone: Madison Square Garden over Penn Station (186), Yankee Stadium (West Concourse,
# 247), Barclays Center (Atlantic and Flatbush, where Boerum Hill 25 meets Fort Greene; judgement: 25), Citi Field
# (Flushing Meadows-Corona Park, 93). Probability of an event night per day, the months of its season, and the
# lift of the hours when crowds leave (judgement: MSG hosts Knicks, Rangers and concerts most nights Oct-Jun;
# baseball plays about half its nights at home Apr-Sep). The models see no calendar of these.
EVENT_VENUES = {
    186: (0.55, (1, 2, 3, 4, 5, 6, 9, 10, 11, 12), 2.5),
    247: (0.45, (4, 5, 6, 7, 8, 9), 3.0),
    25: (0.40, (1, 2, 3, 4, 5, 10, 11, 12), 2.5),
    93: (0.45, (4, 5, 6, 7, 8, 9), 3.0),
}
EVENT_HOURS = (21, 22, 23)
# A day-level shock shared by every zone (the news of the day, a transit outage), lognormal with this spread, and
# zone-day noise (gamma with mean 1 and this coefficient of variation): demand overdispersed beyond Poisson,
# as counts of real zones are. Judgement: with the weather's own spread, a busy zone's same-weekday daily totals
# then vary by about 7% outside holidays and storms (at 5% and 10% they varied by about 12%, which made the
# unknowable day a larger error than the hours' Poisson noise in every busy zone).
DAY_SHOCK_SD = 0.03
ZONE_DAY_NOISE_CV = 0.05

# --- Zone sizes ----------------------------------------------------------------------------------------------

# Relative demand per borough (judgement: most yellow pickups are in Manhattan, then the airports).
BOROUGH_WEIGHT = {
    "Manhattan": 6.0, "Queens": 0.5, "Brooklyn": 0.45, "Bronx": 0.12,
    "Staten Island": 0.02, "EWR": 0.08, "Unknown": 0.3, "N/A": 0.05,
}  # fmt: skip
AIRPORT_BOOST = 25.0
# Where trips end against where they start, per borough (a factor on the borough's share of pickups), and at the
# airports: street hails and the airports' taxi lines start trips, and trips from Manhattan end in the boroughs and
# outside the city. Judgement after the direction the project's audit reads in real files
# (forecast_assets/trip_direction.py): the airports end about a third of the trips they start, the outer boroughs
# several times as many, "N/A" (outside the city) far more.
DROPOFF_FACTOR = {
    "Manhattan": 0.92, "Queens": 2.5, "Brooklyn": 3.5, "Bronx": 3.0,
    "Staten Island": 3.0, "EWR": 1.0, "Unknown": 1.0, "N/A": 6.0,
}  # fmt: skip
AIRPORT_DROPOFF_FACTOR = 0.35
