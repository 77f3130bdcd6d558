"""What the command line says to a person: counts with the right plural, long ids shortened, lines that fit. Pure.

Text only: ``--json`` output carries every value whole.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence

WIDTH = 120  # the longest line a command prints
SHORT = 12  # characters of a hash, fingerprint, snapshot id or run id kept in text
ELLIPSIS = "…"
SHORTEST_PREFIX = 8  # the fewest characters of a shortened id that find its whole value

# The lifecycle's order, so counts of event types read as a run goes: START before COMPLETE.
EVENT_ORDER = ("START", "RUNNING", "COMPLETE", "FAIL", "ABORT", "OTHER")

_MOMENT = re.compile(
    r"^(?P<day>\d{4}-\d{2}-\d{2})[T ](?P<time>\d{2}:\d{2}:\d{2})(?:\.\d+)?(?P<zone>Z|[+-]\d{2}:\d{2})?$"
)
_DIGEST = re.compile(r"^(?P<algorithm>[a-z0-9]+):(?P<digest>[0-9a-f]{16,})$")


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 run``, ``2 runs``, ``0 runs``; ``many`` for a noun whose plural is not the noun and an s."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def counts(counted: Mapping[str, int], order: Sequence[str] = EVENT_ORDER) -> str:
    """``31 START, 31 COMPLETE``: each kind counted, in ``order`` then by name; ``none`` when there is none."""
    rank = {kind: number for number, kind in enumerate(order)}
    kinds = sorted(counted, key=lambda k: (rank.get(k, len(rank)), k))
    return ", ".join(f"{counted[kind]:,} {kind}" for kind in kinds) or "none"


def short(value: object) -> str:
    """A hash, fingerprint, snapshot id or run id cut to its first 12 characters (``sha256:`` kept before them)."""
    text = str(value)
    digest = _DIGEST.match(text)
    if digest:
        return f"{digest['algorithm']}:{short(digest['digest'])}"
    return text if len(text) <= SHORT + 1 else text[:SHORT] + ELLIPSIS


def when(iso: str | None) -> str:
    """An event time as a person reads it: ``2026-11-27 02:18:46Z``, without fractions of a second."""
    if not iso:
        return "an unknown time"
    moment = _MOMENT.match(iso)
    if moment is None:
        return iso
    zone = "Z" if moment["zone"] in ("Z", "+00:00") else moment["zone"] or ""
    return f"{moment['day']} {moment['time']}{zone}"


def unshortened(text: str) -> str:
    """What a person pasted from a shortened id: the part before the ellipsis, to match as a prefix."""
    return text.removesuffix(ELLIPSIS).removesuffix("...")


def matching(wanted: str, known: Iterable[str]) -> str | None:
    """The one of ``known`` that is ``wanted``, or that a shortened ``wanted`` (8 characters or more) is the start of;
    None if none or many."""
    known = list(dict.fromkeys(known))
    if wanted in known:
        return wanted
    start = unshortened(wanted)
    if len(start) < SHORTEST_PREFIX:  # a few characters would find a version by chance
        return None
    found = [value for value in known if value.startswith(start) or _shown_start(value).startswith(start)]
    return found[0] if len(found) == 1 else None


def _shown_start(value: str) -> str:
    return short(value).removesuffix(ELLIPSIS)


def listed(names: Sequence[str], noun: str, many: str | None = None, most: int = 4) -> str:
    """Names joined, or a long run of them as its first and last and how many: ``day_01 … day_31 (31 columns)``."""
    if len(names) <= most:
        return ", ".join(names)
    return f"{names[0]} {ELLIPSIS} {names[-1]} ({plural(len(names), noun, many)})"


def fitted(lines: Iterable[str], width: int = WIDTH) -> list[str]:
    """Each line at most ``width`` characters: a longer one wrapped at spaces, its rest indented under its text."""
    out: list[str] = []
    for line in lines:
        for part in line.split("\n"):
            if len(part) <= width:
                out.append(part)
                continue
            body = part.lstrip(" ")
            lead = " " * (len(part) - len(body))
            marker = re.match(r"(<-|->|#\d+)\s", body)  # a tree's arrow: its continuation aligns under the text
            rest = lead + " " * (len(marker.group(0)) if marker else 0) + "    "
            out += textwrap.wrap(
                body,
                width=width,
                initial_indent=lead,
                subsequent_indent=rest,
                break_on_hyphens=False,
                break_long_words=True,
            )
    return out
