#!/usr/bin/env bash
# Copies Apache Kafka (broker, tools, Java client, their dependencies) of one release from Maven
# Central into tests/reference/.cache/<version>/lib, once: an existing complete cache is kept, so
# re-runs need no network. Usage: scripts/fetch-kafka.sh VERSION LINE (LINE is 3 or 4: it picks the
# logging back end that release's broker expects; see tests/reference/pom.xml).
set -euo pipefail
version="$1"
line="$2"
here="$(cd "$(dirname "$0")/.." && pwd)"
cache="$here/tests/reference/.cache/$version"
stamp="$cache/.complete"
if [ -f "$stamp" ] && [ "$stamp" -nt "$here/tests/reference/pom.xml" ]; then
    exit 0
fi
command -v mvn >/dev/null 2>&1 || { echo "mvn is missing: run scripts/install-system-deps.sh" >&2; exit 1; }
echo "fetching Apache Kafka $version (broker, tools, clients) into $cache/lib"
rm -rf "$cache"
mvn -q -B -f "$here/tests/reference/pom.xml" -Dkafka.version="$version" -Dkafka.line="$line" package
ls "$cache/lib/kafka_2.13-$version.jar" "$cache/lib/kafka-tools-$version.jar" \
    "$cache/lib/kafka-clients-$version.jar" >/dev/null
touch "$stamp"
