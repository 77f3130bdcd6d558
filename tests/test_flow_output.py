"""The training flow's output, read while the runtime is still writing it: only whole lines become events."""

from flows.launch import FlowEventKind, FlowLog, WholeLines

FINISHED = "2025-01-25 10:00:03.500 [1795/load/2 (pid 42)] Task finished successfully."


def test_a_line_read_while_it_is_being_written_arrives_whole():
    lines, log = WholeLines(), FlowLog()
    log.read("2025-01-25 10:00:00.000 [1795/load/2 (pid 42)] Task is starting.")
    cut = FINISHED.index("fini") + 4
    assert lines.feed(FINISHED[:cut].encode()) == []
    [line] = lines.feed(FINISHED[cut:].encode() + b"\n")
    event = log.read(line)
    assert event is not None and event.kind is FlowEventKind.TASK_FINISHED and event.seconds == 3.5


def test_a_character_split_between_two_reads_is_not_damaged():
    text = "[1795/load/2] Température: 3 °C\r\n".encode()
    cut = text.index("é".encode()) + 1
    lines = WholeLines()
    assert lines.feed(text[:cut]) == []
    assert lines.feed(text[cut:]) == ["[1795/load/2] Température: 3 °C"]
    assert lines.rest() == []


def test_the_last_line_without_a_newline_is_read_when_the_stream_ends():
    lines = WholeLines()
    assert lines.feed(b"Done!\nlast") == ["Done!"]
    assert lines.rest() == ["last"]
    assert lines.rest() == []
