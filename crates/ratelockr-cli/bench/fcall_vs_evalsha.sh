#!/usr/bin/env bash
# Redis's CPU per decision of the token bucket called as a script (EVALSHA) and as a function
# (FUNCTION LOAD, FCALL), measured by the server itself (INFO commandstats usec_per_call) under
# redis-benchmark: 200,000 calls, 16 connections, 100,000 keys, 5 rounds alternating.
# Usage: bench/fcall_vs_evalsha.sh [SERVER_BINARY]   (default redis-server; valkey-server works)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-redis-server}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DIR=$(mktemp -d)
"$BIN" --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" --logfile "$DIR/log" &
PID=$!
trap 'kill $PID; rm -rf "$DIR"' EXIT
CLI="redis-cli -p $PORT"
until $CLI ping >/dev/null 2>&1; do sleep 0.1; done
SRC=lua/token_bucket.lua
SHA=$($CLI script load "$(cat $SRC)")
# The same source as the body of a function: KEYS and ARGV become its parameters.
$CLI function load replace "$(printf '#!lua name=ratelockr\nredis.register_function("token_bucket", function(KEYS, ARGV)\n%s\nend)\n' "$(cat $SRC)")" >/dev/null
echo "$($BIN --version)"
for round in 1 2 3 4 5; do
  for how in evalsha fcall; do
    $CLI config resetstat >/dev/null
    target=$SHA; [[ $how == fcall ]] && target=token_bucket
    redis-benchmark -p "$PORT" -n 200000 -c 16 -r 100000 -q "$how" "$target" 1 tb:__rand_int__ 10 5 "" 1 >/dev/null
    echo "round $round $how $($CLI info commandstats | grep "cmdstat_$how:" | grep -oE 'usec_per_call=[0-9.]+|failed_calls=[0-9]+' | tr '\n' ' ')"
  done
done
