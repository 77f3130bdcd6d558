"""The driver JVM's class archive: recorded by one JVM, checked, then started from; never used cut short.

Real JVMs (``java -version``, which loads a few hundred classes) stand in for Spark's driver: the archive's
life does not depend on what the JVM runs, and these take a second where Spark's take ten.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from forecast_assets.lakehouse.class_archive import ClassArchive, java_executable

pytestmark = pytest.mark.integration


@pytest.fixture
def archive(tmp_path: Path) -> ClassArchive:
    java = java_executable()
    assert java is not None, "these tests need the java that runs Spark"
    return ClassArchive(tmp_path / "classes", java, "spark-test-key")


def _java(archive: ClassArchive, options: str, *extra: str) -> subprocess.CompletedProcess:
    """A JVM started as Spark's driver would be, with the options the archive gave."""
    return subprocess.run(
        [str(archive.java), *shlex.split(options), *extra, "-version"], capture_output=True, text=True, check=False
    )


def _record(archive: ClassArchive) -> None:
    options = archive.java_options()
    assert "-XX:ArchiveClassesAtExit=" in options
    jvm = subprocess.Popen([str(archive.java), *shlex.split(options), "-version"], stderr=subprocess.DEVNULL)
    archive.recording_by(jvm.pid)
    assert jvm.wait() == 0
    assert archive.recording.exists(), "the JVM writes what it loaded when it exits"


def test_the_first_jvm_records_and_the_next_starts_from_its_classes(archive):
    _record(archive)

    options = archive.java_options()

    assert options.startswith(f"-XX:SharedArchiveFile={archive.archive} ")
    assert archive.archive.exists() and not archive.recording.exists() and not archive.recorder.exists()
    loaded = _java(archive, options, "-Xlog:class+load=info")
    assert loaded.returncode == 0
    assert "source: shared objects file (top)" in loaded.stdout, "classes come from the recorded archive"


def test_while_a_jvm_records_other_starts_neither_record_nor_use_it(archive):
    assert "ArchiveClassesAtExit" in archive.java_options()  # this process holds the lock, and is alive

    assert archive.java_options() == ""
    assert archive.recorder.read_text() == str(os.getpid())


def test_a_recording_cut_short_is_discarded_and_recorded_again(archive):
    _record(archive)
    whole = archive.recording.read_bytes()
    archive.recording.write_bytes(whole[: len(whole) // 2])  # its writer was killed while writing it
    assert _java(archive, f"-XX:SharedArchiveFile={archive.recording} -XX:ErrorFile=/dev/null").returncode != 0

    options = archive.java_options()

    assert "ArchiveClassesAtExit" in options, "the next start records again"
    assert not archive.archive.exists()
    assert _java(archive, options).returncode == 0


def test_a_recorder_that_died_before_its_jvm_wrote_anything_lets_the_next_start_record(archive):
    archive.folder.mkdir(parents=True)
    finished = subprocess.Popen(["true"])  # noqa: S607 -- a process id that has certainly exited
    finished.wait()
    archive.recorder.write_text(str(finished.pid))

    assert "ArchiveClassesAtExit" in archive.java_options()
    assert archive.recorder.read_text() == str(os.getpid())


def test_archives_of_another_java_or_spark_are_removed_once_a_new_one_is_in_place(archive):
    archive.folder.mkdir(parents=True)
    older = archive.folder / "spark-3.5.0-000000000000.jsa"
    older.write_bytes(b"an archive of another Spark")
    _record(archive)

    archive.java_options()

    assert archive.archive.exists() and not older.exists()


START_SPARK = """
from forecast_assets.definitions import resources_for
from taxi_core.settings import load_settings

print(resources_for(load_settings())["spark"].session.range(3).count())
"""


def test_a_damaged_archive_costs_a_run_nothing_but_the_archive(tmp_path):
    from forecast_assets.definitions import resources_for
    from taxi_core.settings import load_settings

    state = tmp_path / "state"
    state.mkdir()
    # The archive a run's Spark starts from: of its Java, its PySpark and the jars on its driver's class path.
    spark = resources_for(load_settings({"TAXI_STATE_DIR": str(state)}))["spark"]
    class_path = spark.spark_config().get("spark.driver.extraClassPath", "")
    archive = ClassArchive.for_spark(state / "tmp" / "spark-classes", class_path)
    assert archive is not None
    archive.folder.mkdir(parents=True)
    recorded = archive.folder / "small.jsa"
    recording = [str(archive.java), f"-XX:ArchiveClassesAtExit={recorded}", "-version"]
    subprocess.run(recording, capture_output=True, check=True)
    archive.archive.write_bytes(recorded.read_bytes()[: recorded.stat().st_size // 2])  # cut short after it was checked
    environment = {**os.environ, "TAXI_STATE_DIR": str(state), "TAXI_SPARK_CLASS_ARCHIVE": "true"}

    started = subprocess.run(
        [sys.executable, "-c", START_SPARK], env=environment, capture_output=True, text=True, timeout=300, check=False
    )

    assert started.returncode == 0, started.stderr[-3000:]
    assert started.stdout.split()[-1] == "3", "Spark started without the archive and ran a query"
    assert "starting it without that class archive" in started.stderr
    assert not archive.archive.exists(), "the damaged archive is gone, so the next start records a good one"
    assert not list(tmp_path.glob("hs_err*")) and not list(Path.cwd().glob("hs_err*"))


def test_a_folder_with_files_on_the_class_path_records_nothing_and_says_why_once(tmp_path, monkeypatch, caplog):
    """Spark's launcher puts SPARK_CONF_DIR on the driver's class path: with a file in it, the real JVM refuses to
    archive, so no run records (each would pay for a recording Java then throws away)."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.sql.shuffle.partitions 4\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    java = java_executable()
    assert java is not None
    # The premise, on the real JVM running a class of Spark's from the class path (its launcher's main, which exits
    # at once without arguments): with that folder beside the jar it writes nothing, with an empty one it records.
    [launcher] = (Path(pyspark.__file__).parent / "jars").glob("spark-launcher_*.jar")
    for folder, written in ((conf, False), (tmp_path / "empty", True)):
        folder.mkdir(exist_ok=True)
        recorded = tmp_path / f"{folder.name}.jsa"
        command = [str(java), f"-XX:ArchiveClassesAtExit={recorded}", "-Xlog:cds=off", "-cp",
                   f"{folder}{os.pathsep}{launcher}", "org.apache.spark.launcher.Main"]  # fmt: skip
        subprocess.run(command, capture_output=True, check=False)
        assert recorded.exists() == written, folder

    archive = ClassArchive.for_spark(tmp_path / "classes")
    with caplog.at_level("WARNING"):
        assert archive is not None and archive.java_options() == "" and archive.java_options() == ""

    assert not archive.recorder.exists() and not archive.recording.exists()
    said = [record.getMessage() for record in caplog.records if "class archive" in record.getMessage()]
    assert len(said) == 1 and str(conf) in said[0] and "SPARK_CONF_DIR" in said[0]
    (conf / "spark-defaults.conf").unlink()  # an empty folder: Java archives again
    assert "ArchiveClassesAtExit" in ClassArchive.for_spark(tmp_path / "classes").java_options()


def test_recordings_that_leave_nothing_are_tried_twice_then_no_more(archive):
    """A recorder that exits without an archive (Java refused, or the JVM was killed): one more recording is tried,
    then runs start without one rather than pay for a recording each."""
    for _ in range(2):
        options = archive.java_options()
        assert "ArchiveClassesAtExit" in options
        finished = subprocess.Popen(["true"])  # noqa: S607 -- a JVM that exited without writing its archive
        finished.wait()
        archive.recording_by(finished.pid)

    assert archive.java_options() == ""
    assert archive.java_options() == "" and not archive.recorder.exists()
    archive.unrecordable.unlink()  # as the message says: deleting the record tries again
    assert "ArchiveClassesAtExit" in archive.java_options()
