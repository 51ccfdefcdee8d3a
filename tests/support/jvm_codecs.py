"""Runs the JVM codec libraries Kafka's Java client uses (snappy-java, zstd-jni, lz4-java) on
files, through ``JvmCodecs.java`` in source-file mode. The jars come with pyspark."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SOURCE = HERE / "JvmCodecs.java"
JAR_PREFIXES = ("snappy-java-", "zstd-jni-", "lz4-java-")


def _classpath() -> str | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars_dir = Path(pyspark.__file__).parent / "jars"
    jars = []
    for prefix in JAR_PREFIXES:
        found = sorted(jars_dir.glob(f"{prefix}*.jar"))
        if not found:
            return None
        jars.append(str(found[-1]))
    return ":".join(jars)


def jvm_codecs_or_skip() -> str:
    """The classpath, or skips the test when Java or the jars are missing."""
    classpath = _classpath()
    if shutil.which("java") is None or classpath is None:
        pytest.skip("needs java and the snappy-java/zstd-jni/lz4-java jars from pyspark")
    return classpath


def run(jobs: list[tuple[str, str, bytes]], workdir: Path) -> list[bytes | str]:
    """Each job is (``compress``/``decompress``, codec, input); returns output bytes, or the Java
    exception's text when the JVM library refused the input."""
    classpath = jvm_codecs_or_skip()
    args: list[str] = []
    outputs = []
    for i, (mode, codec, data) in enumerate(jobs):
        source = workdir / f"job{i}.in"
        source.write_bytes(data)
        target = workdir / f"job{i}.out"
        args += [mode, codec, str(source), str(target)]
        outputs.append(target)
    subprocess.run(
        ["java", "-Djava.io.tmpdir=" + str(workdir), "-cp", classpath, str(SOURCE), *args],
        check=True,
        timeout=240,
        capture_output=True,
    )
    results: list[bytes | str] = []
    for target in outputs:
        error = target.with_name(target.name + ".error")
        results.append(error.read_text() if error.exists() else target.read_bytes())
    return results
