#!/usr/bin/env bash
# Installs the Debian packages the test suite uses, when they are missing: kcat, ZooKeeper
# (which brings a Java runtime), Maven and a JDK (Apache Kafka as the reference, tests/reference),
# Go with Debian's sarama and kafka-go sources (GOPATH mode, for tests/clients/go), Node.js with
# npm (for tests/clients/js), and Prometheus (its promtool checks deploy/prometheus). Idempotent;
# does nothing when everything is present.
set -euo pipefail

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v go >/dev/null 2>&1 || missing+=(golang-go)
[ -d /usr/share/gocode/src/github.com/Shopify/sarama ] || missing+=(golang-github-shopify-sarama-dev)
[ -d /usr/share/gocode/src/github.com/segmentio/kafka-go ] ||
    missing+=(golang-github-segmentio-kafka-go-dev)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# promtool checks deploy/prometheus's alert rules and configuration
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# Apache Kafka as the reference (tests/reference/pom.xml): Maven fetches it, javac builds the
# Java client tests' small program.
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1
    fi
fi
echo "installing Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
