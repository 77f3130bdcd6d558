"""Start Spark's driver JVM from an archive of the classes it loaded before (Java's dynamic class-data sharing).

Every run starts a JVM that loads and verifies Spark's classes, some 5 s on a 2-core machine; from an
archive of them it starts in about 3 s. The first JVM of a Java and a Spark records the classes it
loads and writes the archive when it exits (``-XX:ArchiveClassesAtExit``), which makes that one run a
few seconds slower. One JVM records at a time: a lock file names the recording process. A later start
moves the recording into place once that process has exited, and only after a throwaway JVM has
started from it. A JVM handed an archive that was cut short (its writer killed) crashes at start, so
no archive is used unchecked; should one be damaged later, the run starts Spark without it
(``SparkResource``) and the archive is recorded again. Archives are kept in one folder of the state
folder, one per Java, Spark and driver class path. Java archives classes from jars only: with a folder that holds
files on the driver's class path (Spark's launcher puts ``SPARK_CONF_DIR`` there) it writes nothing, so no run
records then, and the run says why once; after two recordings in a row that left nothing for another reason, none is
tried again for that Java, Spark and class path (its ``.unrecordable`` file says so).

Classes of a jar Spark loads itself (``spark.jars``) are archived too, but are still read from the jar and used from
the archive only in part (951 of 1,452 of Iceberg's in a start and a query); a local driver has Iceberg's runtime on
its class path instead (``spark_jars.JarPlan.local_spark_conf``), where 4,259 of the 4,292 a month run loads come
from the archive.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pyspark

log = logging.getLogger(__name__)

# The JVM says nothing about the archive: a mismatched one (another class path) is skipped silently.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
SUFFIX = ".jsa"
RECORD, START_FROM = "-XX:ArchiveClassesAtExit=", "-XX:SharedArchiveFile="
RECORDINGS_TRIED = 2  # recordings in a row that left nothing, before runs stop trying (a killed one is retried)


def java_executable() -> Path | None:
    """The ``java`` Spark's launcher runs: ``JAVA_HOME``'s, else the first on the ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _jar_version(jar: Path) -> str:
    try:
        stat = jar.stat()
    except OSError:
        return str(jar)
    return f"{jar}:{stat.st_size}:{stat.st_mtime_ns}"


def launcher_conf_dir() -> Path:
    """The folder Spark's launcher puts first on the driver's class path: ``SPARK_CONF_DIR``, else Spark's ``conf``."""
    from pyspark.find_spark_home import _find_spark_home  # PySpark's own answer, as its launcher uses it

    configured = os.environ.get("SPARK_CONF_DIR")
    return Path(configured) if configured else Path(_find_spark_home()) / "conf"  # type: ignore[no-untyped-call]


def folders_with_files(class_path: str) -> list[Path]:
    """The folders of the driver's class path (the launcher's conf folder first) that hold anything: Java will not
    archive classes with one on the class path."""
    entries = [launcher_conf_dir(), *(Path(entry) for entry in class_path.split(os.pathsep) if entry)]
    found = []
    for entry in entries:
        try:
            if entry.is_dir() and any(entry.iterdir()):
                found.append(entry)
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


_said: set[str] = set()


def _say_once(message: str) -> None:
    """A process says why it has no archive once, not at every session it starts."""
    if message not in _said:
        _said.add(message)
        log.warning(message)


@dataclass(frozen=True)
class ClassArchive:
    """The class archive of one Java and one Spark, in ``folder``."""

    folder: Path
    java: Path
    key: str
    # Why no archive can be recorded for this class path (a folder with files on it), or "".
    blocked_by: str = ""

    @classmethod
    def for_spark(cls, folder: Path, class_path: str = "") -> ClassArchive | None:
        """The archive of the Java that will run Spark, of this PySpark and of the jars the driver adds to its class
        path (``spark.driver.extraClassPath``); None without a ``java`` to run.

        The JVM skips, without a word, an archive recorded with another class path or after a jar on it changed:
        each class path and version of its jars has an archive of its own, recorded on its first run.
        """
        java = java_executable()
        if java is None:
            return None
        stat = java.stat()
        jars = "|".join(_jar_version(Path(jar)) for jar in class_path.split(os.pathsep) if jar)
        identity = f"{java}|{stat.st_size}|{stat.st_mtime_ns}|{pyspark.__version__}|{jars}"
        key = hashlib.sha256(identity.encode()).hexdigest()
        folders = folders_with_files(class_path)
        blocked = (
            f"{', '.join(map(str, folders))} {'is a folder' if len(folders) == 1 else 'are folders'} with files on "
            "the driver's class path (Spark's launcher puts SPARK_CONF_DIR there), and Java archives classes from "
            "jars only"
            if folders
            else ""
        )
        return cls(folder, java, f"spark-{pyspark.__version__}-{key[:12]}", blocked)

    @property
    def archive(self) -> Path:
        return self.folder / f"{self.key}{SUFFIX}"

    @property
    def recording(self) -> Path:
        return self.folder / f"{self.key}.recording{SUFFIX}"

    @property
    def unrecordable(self) -> Path:
        """The recordings that left nothing, one line each: after ``RECORDINGS_TRIED`` no run tries again."""
        return self.folder / f"{self.key}.unrecordable"

    def _gave_up(self) -> bool:
        try:
            return len(self.unrecordable.read_text().splitlines()) >= RECORDINGS_TRIED
        except FileNotFoundError:
            return False

    @property
    def recorder(self) -> Path:
        """The lock file: the id of the process whose JVM records the archive."""
        return self.folder / f"{self.key}.recorder"

    def java_options(self) -> str:
        """The driver JVM's options: start from the archive, or record it, or neither while another JVM records."""
        if self.blocked_by:
            _say_once(f"Spark starts without a class archive (a few seconds slower): {self.blocked_by}.")
            return ""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._take_finished_recording()
            if self._gave_up():
                _say_once(
                    f"Spark starts without a class archive: {RECORDINGS_TRIED} recordings in a row left nothing for "
                    f"this Java, Spark and class path ({self.unrecordable}; delete it to try again)."
                )
                return ""
            if self.archive.exists():
                # Were it damaged after all, the JVM's crash report stays in the state folder, not the working one.
                return f"{START_FROM}{self.archive} -XX:ErrorFile={self.folder}/hs_err_pid%p.log {QUIET}"
            if self._claim():
                return f"{RECORD}{self.recording} {QUIET}"
        except OSError as err:  # a read-only or full state folder: Spark starts as it always did
            log.info("Spark starts without a class archive (%s)", err)
        return ""

    @staticmethod
    def records(options: str) -> bool:
        """Whether a JVM started with ``options`` (:meth:`java_options`) records the archive."""
        return RECORD in options

    def recording_by(self, jvm_pid: int) -> None:
        """Name the JVM that records the archive: it is written when that JVM exits."""
        self.recorder.write_text(str(jvm_pid))

    def discard(self) -> None:
        """Forget the archive (a JVM did not start from it): the next start records it again."""
        self.archive.unlink(missing_ok=True)

    def _claim(self) -> bool:
        try:
            descriptor = os.open(self.recorder, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(descriptor, "w") as lock:
            lock.write(str(os.getpid()))  # until the JVM is started and names itself
        return True

    def _recorder_pid(self) -> int | None:
        try:
            text = self.recorder.read_text().strip()
        except FileNotFoundError:
            return None
        return int(text) if text.isdigit() else 0

    def _take_finished_recording(self) -> None:
        """Once the recording JVM has exited: its archive, if a JVM starts from it, becomes the archive."""
        pid = self._recorder_pid()
        if pid is None or (pid > 0 and _alive(pid)):
            return
        if self.recording.exists() and not self.archive.exists():
            if self._starts_from(self.recording):
                try:
                    os.replace(self.recording, self.archive)
                except FileNotFoundError:  # another start took it first
                    pass
                else:
                    self._forget_other_archives()
            else:
                log.info("Discarding %s: a JVM does not start from it (its writer stopped early)", self.recording)
        elif pid > 0 and not self.recording.exists() and not self.archive.exists():
            # The recording JVM exited and Java wrote nothing (it refused, or the JVM was killed): a recording costs
            # its run seconds, so only a few are tried.
            with self.unrecordable.open("a") as tried:
                tried.write(f"the JVM recording it (pid {pid}) exited and Java wrote no archive\n")
        if self.archive.exists():
            self.unrecordable.unlink(missing_ok=True)
        self.recording.unlink(missing_ok=True)
        self.recorder.unlink(missing_ok=True)

    def _starts_from(self, archive: Path) -> bool:
        check = [str(self.java), f"{START_FROM}{archive}", "-XX:ErrorFile=/dev/null",
                 "-XX:-CreateCoredumpOnCrash", *QUIET.split(), "-version"]  # fmt: skip
        try:
            return subprocess.run(check, capture_output=True, timeout=60, check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def _forget_other_archives(self) -> None:
        """Archives of another Java or Spark: a JVM still mapping one keeps reading it once it is unlinked."""
        for path in self.folder.glob(f"spark-*{SUFFIX}"):
            if not path.name.startswith(self.key):
                path.unlink(missing_ok=True)
