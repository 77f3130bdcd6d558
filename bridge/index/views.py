"""Versioned lineage trees as the lines a person reads, and what changed between two dataset versions. Pure."""

from __future__ import annotations

from collections.abc import Iterator

from bridge.index.queries import ColumnNode, VersionNode


def walk_columns(tree: ColumnNode, depth: int = 1) -> Iterator[tuple[int, ColumnNode]]:
    """Every upstream column of ``tree`` with its depth, depth first."""
    for origin in tree.origins:
        yield depth, origin
        yield from walk_columns(origin, depth + 1)


def _version_text(node: VersionNode) -> str:
    name = f"{node.dataset} [{node.partition}]" if node.partition else node.dataset
    text = name + (f" @ {node.version}" if node.version else " (no version recorded)")
    if node.repeated:
        return text + "  (shown above)"
    if node.partitions:
        count = len({part.partition for part in node.partitions})
        return text + f"  read as {count} partition{'s' if count != 1 else ''}, each at the version that wrote it:"
    if node.written_by is None:
        return text + "  (no run in the lineage wrote this version)"
    return text + f"  written by {node.written_by.describe()}"


def version_lines(tree: VersionNode) -> list[str]:
    lines = [_version_text(tree)]

    def visit(node: VersionNode, depth: int) -> None:
        for part in node.partitions:  # parts of the version above, not made from it: no arrow
            lines.append(f"  {'   ' * depth}{_version_text(part)}")
            visit(part, depth + 2)
        for read in node.read:
            lines.append(f"  {'   ' * (depth - 1)}<- {_version_text(read)}")
            visit(read, depth + 1)

    visit(tree, 1)
    return lines


def version_differences(
    before: VersionNode, after: VersionNode, columns_before: set[str], columns_after: set[str]
) -> list[str]:
    """What changed from one version of a dataset to another: the versions read, and the column lineage."""
    old = {node.dataset: node.version for node in before.read}
    new = {node.dataset: node.version for node in after.read}
    lines = []
    for name in sorted(new.keys() - old.keys()):
        lines.append(f"version {after.version} started reading {name} (version {new[name]}).")
    for name in sorted(old.keys() - new.keys()):
        lines.append(f"version {after.version} stopped reading {name}, which version {before.version} read.")
    for name in sorted(old.keys() & new.keys()):
        verb = "both read" if old[name] == new[name] else f"read at version {old[name]}, now at"
        lines.append(f"{name}: {verb} version {new[name]}.")
    lines += [f"new column lineage: {line}" for line in sorted(columns_after - columns_before)]
    lines += [f"column lineage gone: {line}" for line in sorted(columns_before - columns_after)]
    was, now = before.written_by, after.written_by
    rewritten = None if was is None or now is None or was.job == now.job else f"written by {was.job}, now by {now.job}."
    if rewritten:
        lines.append(rewritten)
    if old == new and columns_before == columns_after and rewritten is None:
        return ["No difference: both read the same inputs at the same versions, with the same column lineage.", *lines]
    return lines
