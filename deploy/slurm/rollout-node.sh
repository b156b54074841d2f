#!/usr/bin/env bash
# One engine node of a Slurm job (run by rollout.sbatch with srun, one task per host).
# From Slurm's variables it works out this host's part:
#   SLURM_JOB_NODELIST   the job's hosts (node[01-04]); the first ROLLOUT_COORDINATORS of them are
#                        coordinator-capable (default 3, at most the host count) and the cluster's seed nodes
#   SLURMD_NODENAME      this host's name (else `hostname -s`)
# The first host also serves the trainer gateway. --plan prints the plan instead of starting:
#   ROLE=…  SEEDS=…  GATEWAY=…  HOST=…
# Environment: ROLLOUT_HOME (the unpacked release; default: the one holding this script),
# ROLLOUT_CONFIG (the run configuration, --config), ROLLOUT_PORT (25520), ROLLOUT_GATEWAY_PORT (8470),
# ROLLOUT_MANAGEMENT_PORT (8558), ROLLOUT_NODE_ARGS (more arguments of rollout node),
# ROLLOUT_GATEWAY_TOKEN (required on the gateway's host: the gateway binds 0.0.0.0; the node reads it
# from the environment, so it never shows in the process list).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

: "${SLURM_JOB_NODELIST:?rollout-node.sh: SLURM_JOB_NODELIST is not set (run it inside a Slurm job, or set it)}"
mapfile -t hosts < <("$HERE/hostlist.sh" "$SLURM_JOB_NODELIST")
self=${SLURMD_NODENAME:-$(hostname -s)}
coordinators=${ROLLOUT_COORDINATORS:-3}
if [[ ! $coordinators =~ ^[0-9]+$ ]] || ((coordinators < 1)); then
  echo "rollout-node.sh: ROLLOUT_COORDINATORS=$coordinators: must be an integer >= 1" >&2
  exit 2
fi
((coordinators > ${#hosts[@]})) && coordinators=${#hosts[@]}
port=${ROLLOUT_PORT:-25520}
gateway_port=${ROLLOUT_GATEWAY_PORT:-8470}
management_port=${ROLLOUT_MANAGEMENT_PORT:-8558}

index=-1
for i in "${!hosts[@]}"; do
  [[ ${hosts[$i]} == "$self" ]] && index=$i && break
done
if ((index < 0)); then
  echo "rollout-node.sh: this host ($self) is not in SLURM_JOB_NODELIST ($SLURM_JOB_NODELIST = ${hosts[*]})" >&2
  exit 2
fi

roles=rollout
((index < coordinators)) && roles="coordinator,rollout"
((index == 0)) && roles="$roles,gateway"
seeds=""
for ((i = 0; i < coordinators; i++)); do
  seeds+="${seeds:+,}${hosts[$i]}:$port"
done
gateway="http://${hosts[0]}:$gateway_port"

if [[ ${1:-} == --plan ]]; then
  echo "HOST=$self"
  echo "ROLE=$roles"
  echo "SEEDS=$seeds"
  echo "GATEWAY=$gateway"
  exit 0
fi

if [[ $roles == *gateway* && -z ${ROLLOUT_GATEWAY_TOKEN:-} && ${ROLLOUT_NODE_ARGS:-} != *--gateway-token* ]]; then
  echo "rollout-node.sh: ROLLOUT_GATEWAY_TOKEN is not set: the trainer gateway on $self listens on every" \
    "interface and requires a token (rollout node --gateway-token or \$ROLLOUT_GATEWAY_TOKEN)" >&2
  exit 2
fi
home=${ROLLOUT_HOME:-$(cd "$HERE/../.." && pwd)}
args=(node --name "$self" --roles "$roles" --host "$self" --port "$port" --seed-nodes "$seeds"
  --management-port "$management_port" --management-host "$self")
[[ $roles == *gateway* ]] && args+=(--gateway-host 0.0.0.0 --gateway-port "$gateway_port")
[[ -n ${ROLLOUT_CONFIG:-} ]] && args+=(--config "$ROLLOUT_CONFIG")
# shellcheck disable=SC2206  # extra arguments, split on spaces on purpose
[[ -n ${ROLLOUT_NODE_ARGS:-} ]] && args+=($ROLLOUT_NODE_ARGS)
exec "$home/bin/rollout" "${args[@]}"
