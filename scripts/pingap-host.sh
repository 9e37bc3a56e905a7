#!/bin/sh
# Runs the board API inside a real pingap, the Pingora reverse proxy, as its
# `shared_board_api` plugin:
#
#   scripts/pingap-host.sh BOARD_API_YAML ADDR   build (cached), write a pingap
#                                                config serving /api on ADDR
#                                                through the plugin, run pingap
#                                                in the foreground
#   scripts/pingap-host.sh --build               build only; prints the binary
#
# BOARD_API_YAML is a file with a `board_api` section, the same keys and
# checks as the standalone binary's configuration. The pingap binary is built
# from pingap's own crates.io source with one line added to its `main()` (the
# call that registers the plugin, docs/pingap.md) and the plugin crate of this
# repository added to its dependencies. Everything lives under
# target/pingap-host/ (PINGAP_HOST_DIR to move it): a second run rebuilds only
# what changed. The pingap configuration is written to
# target/pingap-host/conf/pingap.toml (PINGAP_HOST_CONF: another directory);
# PINGAP_THREADS sets pingap's worker threads (its default is 1);
# PINGAP_ACCESS_LOG the access log's format (default the one docs/pingap.md
# documents; empty: no access log); PINGAP_OTLP the endpoint of pingap's
# span export (default none). pingap is built with its `tracing` feature and
# the plugin with its own, so the plugin's spans continue pingap's. Installs protobuf-compiler and cmake
# with apt-get when missing.
set -eu

PINGAP_VERSION=0.16.1
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${PINGAP_HOST_DIR:-$repo/target/pingap-host}

usage() {
  echo "usage: scripts/pingap-host.sh BOARD_API_YAML ADDR | scripts/pingap-host.sh --build" >&2
  exit 2
}

install_tools() {
  need=""
  # A build script in pingap's tree (its OpenTelemetry protocol types) runs protoc.
  command -v protoc >/dev/null 2>&1 || need="$need protobuf-compiler"
  command -v cmake >/dev/null 2>&1 || need="$need cmake"
  [ -f /etc/ssl/certs/ca-certificates.crt ] || need="$need ca-certificates"
  [ -n "$need" ] || return 0
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "pingap-host: need$need; install them as root (apt-get install -y$need)" >&2
      exit 1
    }
    sudo="sudo"
  fi
  echo "pingap-host: installing$need with apt-get" >&2
  $sudo apt-get update -qq
  # shellcheck disable=SC2086 # word splitting of the package list is wanted
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >&2
}

# pingap's published source: cargo downloads it as a dependency of an empty
# package and unpacks it into its registry; a copy of it is patched.
pingap_source() {
  fetch="$dir/fetch"
  mkdir -p "$fetch/src"
  # Several runs of this script may share the directory at once (the tests
  # start a pingap each, in parallel): the manifest is written aside and
  # moved in whole, and only when it changed, so that no run's cargo reads
  # it truncated.
  manifest=$(mktemp "$fetch/Cargo.toml.XXXXXX")
  cat >"$manifest" <<EOF
[package]
name = "pingap-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
pingap = { version = "=$PINGAP_VERSION", default-features = false }

[workspace]
EOF
  if cmp -s "$manifest" "$fetch/Cargo.toml"; then
    rm -f "$manifest"
  else
    mv -f "$manifest" "$fetch/Cargo.toml"
  fi
  [ -f "$fetch/src/lib.rs" ] || : >"$fetch/src/lib.rs"
  (cd "$fetch" && cargo fetch -q >&2)
  home=${CARGO_HOME:-$HOME/.cargo}
  for src in "$home"/registry/src/*/pingap-"$PINGAP_VERSION"; do
    if [ -f "$src/src/main.rs" ]; then
      echo "$src"
      return 0
    fi
  done
  echo "pingap-host: pingap $PINGAP_VERSION's source not found under $home/registry/src" >&2
  exit 1
}

# The copy of pingap's source with the plugin linked in: its own workspace
# (it sits inside this repository's), the plugin crate as a dependency, and
# the one line in main() that registers the plugin with pingap's factory.
prepare() {
  src=$(pingap_source)
  work="$dir/pingap-$PINGAP_VERSION"
  # .patched names the repository the copy links: a build directory moved
  # or copied to another checkout is prepared again, never built against
  # the other checkout's plugin.
  if [ "$(cat "$work/.patched" 2>/dev/null)" != "$repo" ]; then
    rm -rf "$work"
    cp -R "$src" "$work"
    chmod -R u+w "$work"
    cat >>"$work/Cargo.toml" <<EOF

[dependencies.shared-board-api-pingap]
path = "$repo/pingap-plugin"
features = ["tracing"]

[workspace]
EOF
    main="$work/src/main.rs"
    [ "$(grep -c '^fn main() {$' "$main")" = 1 ] || {
      echo "pingap-host: pingap's main.rs has no single 'fn main() {' line to patch" >&2
      exit 1
    }
    sed -i 's/^fn main() {$/fn main() {\n    shared_board_api_pingap::register();/' "$main"
    printf '%s' "$repo" >"$work/.patched"
  fi
}

build() {
  install_tools
  prepare
  # pingap's release profile is fat LTO with one codegen unit; built with the
  # profile this repository's binary has (no LTO across crates, 16 units), the
  # build takes a fraction of the time and the two hosts are compared as
  # equals. Its `openssl` default is off: this crate is rustls only.
  (
    cd "$dir/pingap-$PINGAP_VERSION"
    CARGO_TARGET_DIR="$dir/target" \
      CARGO_PROFILE_RELEASE_LTO=false \
      CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      nice -n 10 cargo build --release --ignore-rust-version \
      --no-default-features --features tls-rustls,tracing --bin pingap >&2
  )
  echo "$dir/target/release/pingap"
}

case "${1:-}" in
  --build)
    [ $# -eq 1 ] || usage
    build
    exit 0
    ;;
  "" | -*) usage ;;
esac
[ $# -eq 2 ] || usage
yaml=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -f "$yaml" ] || { echo "pingap-host: no such file: $1" >&2; exit 1; }
addr=$2
bin=$(build)
conf=${PINGAP_HOST_CONF:-$dir/conf}
mkdir -p "$conf"
# pingap's configuration: one server on ADDR with one location, /api, whose
# plugin answers every path under it; the access log without the query
# string, which carries the share link and its permission id (docs/pingap.md).
threads=""
[ -z "${PINGAP_THREADS:-}" ] || threads="threads = $PINGAP_THREADS"
access_log=""
format=${PINGAP_ACCESS_LOG-'{when} {client_ip} "{method} {path} {proto}" {status} {size} {latency}ms'}
[ -z "$format" ] || access_log="access_log = '$format'"
# PINGAP_OTLP: pingap's own span export (its server's otlp_exporter, e.g.
# http://127.0.0.1:4318/?protocol=http); the plugin's spans join its trace.
otlp=""
[ -z "${PINGAP_OTLP:-}" ] || otlp="otlp_exporter = '$PINGAP_OTLP'"
cat >"$conf/pingap.toml" <<EOF
[basic]
name = "shared-board-api"
log_level = "info"
$threads

[locations.boards]
path = "/api"
plugins = ["boards"]

[servers.gateway]
addr = "$addr"
locations = ["boards"]
$access_log
$otlp

[plugins.boards]
category = "shared_board_api"
config = "$yaml"
EOF
exec "$bin" -c "$conf/pingap.toml"
