#!/bin/bash
# HEALTHCHECK of the Sluice image: exit 0 when /health/ready on the metrics port (the argument,
# default 7673) answers 200, else 1. Plain bash (/dev/tcp), because the JRE image has no curl.
port="${1:-7673}"
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf 'GET /health/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
read -r -t 5 status_line <&3 || exit 1
case "$status_line" in
  *" 200 "*) exit 0 ;;
  *) exit 1 ;;
esac
