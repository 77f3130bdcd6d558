"""Versioned lineage trees as the lines a person reads, and what changed between two dataset versions. Pure.

Text shortens hashes, snapshot ids and run ids (:func:`bridge.wording.short`) and sums up long runs of columns
from one file; the trees' JSON carries every value whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from bridge.index.queries import ColumnNode, PartitionWrite, VersionNode
from bridge.wording import listed, plural, short

# Sibling source columns read the same way from one file are one line past this many (``day_01 … day_31``).
LISTED_COLUMNS = 4


def walk_columns(tree: ColumnNode, depth: int = 1) -> Iterator[tuple[int, ColumnNode]]:
    """Every upstream column of ``tree`` with its depth, depth first."""
    for origin in tree.origins:
        yield depth, origin
        yield from walk_columns(origin, depth + 1)


@dataclass(frozen=True)
class ColumnLine:
    """One line of a column tree: a column, or sibling columns of one dataset version read the same way."""

    depth: int
    dataset: str
    columns: tuple[str, ...]
    version: str | None
    how: tuple[str, ...]
    repeated: bool
    partition: str | None

    def text(self, brief: bool = True) -> str:
        where = f" [{self.partition}]" if self.partition else ""
        if len(self.columns) == 1:
            name = f"{self.dataset}.{self.columns[0]}{where}"
        else:
            name = f"{self.dataset}{where}: {listed(self.columns, 'column', most=LISTED_COLUMNS)}"
            if len(self.columns) <= LISTED_COLUMNS:
                name += f" ({plural(len(self.columns), 'column')})"
        version = f" @ {short(self.version) if brief else self.version}" if self.version else ""
        seen = "  (shown above)" if self.repeated else ""
        return f"  {'   ' * (self.depth - 1)}<- {name}{version}  {transformations(self.how)}{seen}"


def transformations(how: tuple[str, ...]) -> str:
    """``DIRECT:TRANSFORMATION, INDIRECT:FILTER/GROUP_BY/JOIN``: each kind once, its subtypes after it."""
    kinds: dict[str, list[str]] = {}
    for one in how:
        kind, _, subtype = one.partition(":")
        kinds.setdefault(kind, []).extend([subtype] if subtype else [])
    return ", ".join(f"{kind}:{'/'.join(subtypes)}" if subtypes else kind for kind, subtypes in kinds.items())


def column_lines(tree: ColumnNode, every_column: bool = False) -> list[ColumnLine]:
    """The upstream columns of ``tree``, depth first; siblings with nothing upstream that are columns of the same
    dataset version, read the same way, are one line (each its own with ``every_column``)."""
    lines: list[ColumnLine] = []

    def visit(node: ColumnNode, depth: int) -> None:
        for origin in node.origins:
            line = ColumnLine(
                depth, origin.dataset, (origin.column,), origin.version, origin.how, origin.repeated, origin.partition
            )
            previous = lines[-1] if lines else None
            if (
                not every_column
                and not origin.origins
                and previous is not None
                and previous.depth == depth
                and _same_read(previous, line)
                and _last_was_a_leaf(node, origin)
            ):
                lines[-1] = ColumnLine(
                    depth, line.dataset, (*previous.columns, origin.column), line.version, line.how,
                    line.repeated, line.partition,
                )  # fmt: skip
                continue
            lines.append(line)
            visit(origin, depth + 1)

    visit(tree, 1)
    return lines


def _same_read(a: ColumnLine, b: ColumnLine) -> bool:
    def key(line: ColumnLine) -> tuple[object, ...]:
        return line.dataset, line.version, line.how, line.repeated, line.partition

    return key(a) == key(b)


def _last_was_a_leaf(parent: ColumnNode, origin: ColumnNode) -> bool:
    """True when the sibling just before ``origin`` has nothing upstream: only such lines may be merged."""
    index = next(i for i, sibling in enumerate(parent.origins) if sibling is origin)
    return index > 0 and not parent.origins[index - 1].origins


def _version_text(node: VersionNode, brief: bool) -> str:
    shown = short if brief else str
    name = f"{node.dataset} [{node.partition}]" if node.partition else node.dataset
    text = name + (f" @ {shown(node.version)}" if node.version else " (no version recorded)")
    if node.repeated:
        return text + "  (shown above)"
    if node.partitions:
        count = len({part.partition for part in node.partitions})
        return text + f"  read as {plural(count, 'partition')}, each at the version that wrote it:"
    if node.written_by is None:
        return text + "  (no run in the lineage wrote this version)"
    return text + f"  written by {node.written_by.describe(brief)}"


def version_lines(tree: VersionNode, brief: bool = True) -> list[str]:
    """The tree as lines; ``brief`` shortens versions and run ids."""
    lines = [_version_text(tree, brief)]

    def visit(node: VersionNode, depth: int) -> None:
        for part in node.partitions:  # parts of the version above, not made from it: no arrow
            lines.append(f"  {'   ' * depth}{_version_text(part, brief)}")
            visit(part, depth + 2)
        for read in node.read:
            lines.append(f"  {'   ' * (depth - 1)}<- {_version_text(read, brief)}")
            visit(read, depth + 1)

    visit(tree, 1)
    return lines


def contents_differences(
    before: dict[str | None, PartitionWrite], after: dict[str | None, PartitionWrite], brief: bool = False
) -> list[str]:
    """Which partitions two versions of one table hold differently, and from what: each changed partition's writing
    version and the inputs (a source file's fingerprint, a table's snapshot) that differ."""
    shown = short if brief else str
    if before == after:
        return []

    def name(partition: str | None) -> str:
        return "the whole table" if partition is None else f"partition {partition}"

    lines = []
    for partition in sorted(after.keys() - before.keys(), key=str):
        lines.append(f"{name(partition)} added (written at {shown(after[partition].version)}).")
    for partition in sorted(before.keys() - after.keys(), key=str):
        lines.append(f"{name(partition)} gone (it was written at {shown(before[partition].version)}).")
    same = 0
    for partition in sorted(before.keys() & after.keys(), key=str):
        was, now = before[partition], after[partition]
        if was.version == now.version:
            same += 1
            continue
        old, new = dict(was.read), dict(now.read)
        changed = [
            f"{input_name} {shown(old[input_name]) if old.get(input_name) else 'unknown'} -> "
            f"{shown(new[input_name]) if new.get(input_name) else 'unknown'}"
            for input_name in sorted(old.keys() | new.keys())
            if old.get(input_name) != new.get(input_name)
        ]
        said = f"; from {listed(changed, 'input')}" if changed else "; from the same inputs at the same versions"
        lines.append(f"{name(partition)} rewritten: {shown(was.version)} -> {shown(now.version)}{said}.")
    if same:
        lines.append(f"{plural(same, 'partition')} the same in both.")
    return lines


def version_differences(
    before: VersionNode, after: VersionNode, columns_before: set[str], columns_after: set[str], brief: bool = False
) -> list[str]:
    """What changed from one version of a dataset to another: the versions read, and the column lineage."""

    def shown(version: str | None) -> str:
        if version is None:
            return "unknown"
        return short(version) if brief else version

    old = {node.dataset: node.version for node in before.read}
    new = {node.dataset: node.version for node in after.read}
    lines = []
    for name in sorted(new.keys() - old.keys()):
        lines.append(f"version {shown(after.version)} started reading {name} (version {shown(new[name])}).")
    for name in sorted(old.keys() - new.keys()):
        lines.append(
            f"version {shown(after.version)} stopped reading {name}, which version {shown(before.version)} read."
        )
    for name in sorted(old.keys() & new.keys()):
        verb = "both read" if old[name] == new[name] else f"read at version {shown(old[name])}, now at"
        lines.append(f"{name}: {verb} version {shown(new[name])}.")
    lines += [f"new column lineage: {line}" for line in sorted(columns_after - columns_before)]
    lines += [f"column lineage gone: {line}" for line in sorted(columns_before - columns_after)]
    was, now = before.written_by, after.written_by
    rewritten = None if was is None or now is None or was.job == now.job else f"written by {was.job}, now by {now.job}."
    if rewritten:
        lines.append(rewritten)
    if old == new and columns_before == columns_after and rewritten is None:
        return ["No difference: both read the same inputs at the same versions, with the same column lineage.", *lines]
    return lines
