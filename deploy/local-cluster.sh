#!/usr/bin/env bash
# A three-node rollout cluster on this machine (127.0.0.1), end to end:
#   two model servers (rollout model-server, serving the demo's v0 weights),
#   node-1: coordinator + rollout + gateway (seed), node-2: coordinator + rollout, node-3: rollout,
#   the demo trainer (rollout trainer-demo) against node-1's gateway, for $STEPS steps.
# Waits until the trainer finishes, then stops everything it started, by PID (TERM, then KILL).
# Logs and weights go to $RUN_DIR (default: runs/cluster-<time>). Exit status: the trainer's.
#
#   deploy/local-cluster.sh                    # 20 steps
#   STEPS=50 PROFILE=cluster-config/aeron.conf deploy/local-cluster.sh
#
# Ports: BASE_PORT (default 25520) .. +2 for the nodes, GATEWAY_PORT (8470), model servers pick
# free ports. Needs the engine built (the README's build command, or bin/rollout builds it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STEPS="${STEPS:-20}"
BASE_PORT="${BASE_PORT:-25520}"
GATEWAY_PORT="${GATEWAY_PORT:-8470}"
RUN_DIR="${RUN_DIR:-runs/cluster-$(date +%Y%m%d-%H%M%S)}"
PROFILE="${PROFILE:-}"
DEADLINE_S="${DEADLINE_S:-600}"
mkdir -p "$RUN_DIR"
RUN_DIR="$(cd "$RUN_DIR" && pwd)"

PIDS=()
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    local alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && return 0
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT

# Build once, before starting processes in parallel (bin/rollout builds when stale).
bin/rollout --version >/dev/null

# start NAME LINE-TO-WAIT-FOR ARGS...: starts bin/rollout ARGS in the background, logging to
# $RUN_DIR/NAME.log, and waits (up to 120 s) for a line matching LINE.
start() {
  local name="$1" ready="$2"; shift 2
  bin/rollout "$@" >"$RUN_DIR/$name.log" 2>&1 &
  PIDS+=("$!")
  local pid=$! i
  for i in $(seq 1 1200); do
    if grep -q -- "$ready" "$RUN_DIR/$name.log" 2>/dev/null; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "local-cluster: $name exited before it was ready; its log:" >&2
      tail -n 40 "$RUN_DIR/$name.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "local-cluster: $name not ready within 120 s ($RUN_DIR/$name.log)" >&2
  exit 1
}

V0="$(bin/rollout demo-weights "$RUN_DIR/weights" | tail -n 1)"
SERVERS=()
for i in 1 2; do
  start "server-$i" "model server listening on" model-server --port 0 --weights "$V0"
  SERVERS+=("$(grep -o '127.0.0.1:[0-9]*' "$RUN_DIR/server-$i.log" | head -n 1)")
done
SERVER_LIST="$(IFS=,; echo "${SERVERS[*]}")"
echo "local-cluster: model servers ${SERVER_LIST}; logs in $RUN_DIR"

SEED="127.0.0.1:$BASE_PORT"
COMMON=(--demo --seed-nodes "$SEED")
[[ -n $PROFILE ]] && COMMON+=(--profile "$PROFILE")
CONF=("rollout.servers=$SERVER_LIST" "rollout.trial_name=$(basename "$RUN_DIR")" "rollout.fileroot=$RUN_DIR/out")

t0=$(date +%s%N)
start node-1 "gateway listening on" node "${COMMON[@]}" --name node-1 --port "$BASE_PORT" \
  --roles coordinator,rollout,gateway --gateway-port "$GATEWAY_PORT" "${CONF[@]}"
start node-2 "node up:" node "${COMMON[@]}" --name node-2 --port $((BASE_PORT + 1)) --roles coordinator,rollout "${CONF[@]}"
start node-3 "node up:" node "${COMMON[@]}" --name node-3 --port $((BASE_PORT + 2)) --roles rollout "${CONF[@]}"
t1=$(date +%s%N)
echo "local-cluster: three nodes up in $(( (t1 - t0) / 1000000 )) ms (JVM start included)"

set +e
timeout "$DEADLINE_S" bin/rollout trainer-demo --contact "http://127.0.0.1:$GATEWAY_PORT" --steps "$STEPS" \
  --initial-weights "$V0" --weights-dir "$RUN_DIR/trainer-weights" 2>&1 | tee "$RUN_DIR/trainer.log"
status=${PIPESTATUS[0]}
set -e
for n in 1 2 3; do
  grep "groups started here" "$RUN_DIR/node-$n.log" | tail -n 1 || echo "node-$n: no progress line yet"
done
echo "local-cluster: trainer exited with $status; stopping ${#PIDS[@]} processes"
exit "$status"
