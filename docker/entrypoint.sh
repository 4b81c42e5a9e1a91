#!/bin/sh
# Entry point of the Sluice image. The broker listens on 0.0.0.0 inside the container, which it refuses
# to do without users (docs/security.md), so users come from a mounted configuration file or from
# SLUICE_USER and SLUICE_PASSWORD_HASH; with neither, this says so and exits 2.
# Commands other than running the broker (hash-password, verify, dump, admin, certs) pass straight through.
set -eu
home="$(cd "$(dirname "$0")" && pwd)"
jar="$home/sluice-broker.jar"
config="${SLUICE_CONFIG:-/etc/sluice/sluice.yaml}"
data="${SLUICE_DATA_DIR:-/var/lib/sluice}"
# glibc's malloc held to two arenas, as bin/sluice does (see there).
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
# The JVM's options, the ones bin/sluice starts a broker with (sluice-jvm-options says why); options in
# SLUICE_JAVA_OPTS come later and win.
. "$home/sluice-jvm-options"
java_bin="$(readlink -f "$(command -v java)" || true)"
jvm_options="$(sluice_jvm_options "${java_bin%/bin/java}")"
# The class archive the Dockerfile made at image build, if it did (docs/operations.md, "Start-up and the class
# archive"); a JVM that cannot use it starts without it (-Xshare:auto, the default).
share=""
if [ -f "$home/sluice-broker.jsa" ]; then
  share="-XX:SharedArchiveFile=$home/sluice-broker.jsa"
fi
case "${1:-}" in
  hash-password|verify|dump|admin|certs|--help|-h|--version)
    exec java $jvm_options $share ${SLUICE_JAVA_OPTS:-} -jar "$jar" "$@" ;;
esac
# A setting given is a setting meant: one set to nothing, or a SLUICE_CONFIG naming no file, is refused rather than read as
# unset (the broker would start on SLUICE_USER's user and the defaults, ignoring the file it was pointed at).
if [ "${SLUICE_CONFIG+set}" = set ] && [ -z "$SLUICE_CONFIG" ]; then
  echo "sluice image: SLUICE_CONFIG is set but empty: name the configuration file, or unset it for /etc/sluice/sluice.yaml" >&2
  exit 2
fi
if [ "${SLUICE_DATA_DIR+set}" = set ] && [ -z "$SLUICE_DATA_DIR" ]; then
  echo "sluice image: SLUICE_DATA_DIR is set but empty: name the data directory, or unset it for /var/lib/sluice" >&2
  exit 2
fi
if [ -n "${SLUICE_CONFIG:-}" ] && [ -d "$config" ]; then
  echo "sluice image: SLUICE_CONFIG names $config, which is a directory, not a configuration file" >&2
  exit 2
elif [ -n "${SLUICE_CONFIG:-}" ] && [ ! -e "$config" ]; then
  echo "sluice image: SLUICE_CONFIG names $config, which does not exist: mount the configuration there, or unset SLUICE_CONFIG" >&2
  exit 2
fi
# Half a user, or users given both ways, would be ignored: said instead.
if [ -n "${SLUICE_USER:-}" ] && [ -z "${SLUICE_PASSWORD_HASH:-}" ]; then
  echo "sluice image: SLUICE_USER is set but SLUICE_PASSWORD_HASH is not; the user needs both (print a hash with:" \
       "docker run --rm -i IMAGE hash-password)" >&2
  exit 2
fi
if [ -z "${SLUICE_USER:-}" ] && [ -n "${SLUICE_PASSWORD_HASH:-}" ]; then
  echo "sluice image: SLUICE_PASSWORD_HASH is set but SLUICE_USER is not; the user needs both" >&2
  exit 2
fi
if [ -e "$config" ]; then
  if [ -n "${SLUICE_USER:-}" ]; then
    echo "sluice image: SLUICE_USER is set and a configuration is mounted at $config; the image takes users one way:" \
         "put them in the configuration's auth.users and unset SLUICE_USER and SLUICE_PASSWORD_HASH" >&2
    exit 2
  fi
  # Whatever is there goes to the broker, which names what is wrong with it (a directory, as docker makes where -v mounts
  # a host path that does not exist; unreadable; not YAML).
  set -- --config "$config" "$@"
elif [ -n "${SLUICE_USER:-}" ]; then
  # Both values go into YAML, so they may hold only the characters a user name and a hash are made of.
  case "$SLUICE_USER" in
    *[!A-Za-z0-9._-]*) echo "sluice image: SLUICE_USER '$SLUICE_USER' may hold only A-Z a-z 0-9 . _ -" >&2; exit 2 ;;
  esac
  case "$SLUICE_PASSWORD_HASH" in
    pbkdf2-sha256:*) ;;
    *) echo "sluice image: SLUICE_PASSWORD_HASH is not a pbkdf2-sha256:... hash; print one with: docker run --rm -i IMAGE hash-password" >&2; exit 2 ;;
  esac
  case "$SLUICE_PASSWORD_HASH" in
    *[!A-Za-z0-9+/=:-]*) echo "sluice image: SLUICE_PASSWORD_HASH holds characters no hash has" >&2; exit 2 ;;
  esac
  generated="$(mktemp "${TMPDIR:-/tmp}/sluice-users.XXXXXX.yaml")"
  cat > "$generated" <<YAML
auth:
  allow-anonymous: false
  users:
    - name: "$SLUICE_USER"
      password-hash: "$SLUICE_PASSWORD_HASH"
      permissions:
        - queues: "*"
          actions: [publish, consume, manage, monitor]
YAML
  set -- --config "$generated" "$@"
else
  echo "sluice image: no users configured: mount a configuration with auth.users at $config," \
       "or set SLUICE_USER and SLUICE_PASSWORD_HASH (print a hash with: docker run --rm -i IMAGE hash-password)" >&2
  exit 2
fi
# With -XX:+ExitOnOutOfMemoryError (sluice-jvm-options), the container's restart policy starts a broker that ran out
# of heap again.
exec java $jvm_options $share ${SLUICE_JAVA_OPTS:-} -jar "$jar" --data-dir "$data" --listen 0.0.0.0 --set metrics.listen-address=0.0.0.0 "$@"
