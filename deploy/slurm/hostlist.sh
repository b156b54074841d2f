#!/usr/bin/env bash
# Expands a Slurm host list (SLURM_JOB_NODELIST's form) into one host per line, in order:
#   hostlist.sh 'node[01-03,07],gpu-a[1-2]x,login'   prints node01 node02 node03 node07 gpu-a1x gpu-a2x login
# Ranges keep their zero padding (01-03); a name may hold several bracket groups (rack[1-2]-n[1-2]).
# The same as `scontrol show hostnames`, for machines (and tests) without Slurm's tools.
set -euo pipefail

# Splits $1 at the commas that are outside brackets, one part per line.
split_top() {
  local s=$1 part="" depth=0 c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
      '[') depth=$((depth + 1)); part+=$c ;;
      ']') depth=$((depth - 1)); part+=$c ;;
      ',') if ((depth == 0)); then printf '%s\n' "$part"; part=""; else part+=$c; fi ;;
      *) part+=$c ;;
    esac
  done
  [[ -n $part ]] && printf '%s\n' "$part"
  return 0
}

# Expands the first bracket group of $1, recursively for the rest.
expand_one() {
  local name=$1
  if [[ $name != *'['* ]]; then
    printf '%s\n' "$name"
    return
  fi
  local prefix=${name%%\[*} rest=${name#*\[}
  if [[ $rest != *']'* ]]; then
    echo "hostlist.sh: unbalanced '[' in host list entry '$name'" >&2
    exit 2
  fi
  local ranges=${rest%%\]*} suffix=${rest#*\]} range lo hi width n
  IFS=',' read -r -a parts <<<"$ranges"
  for range in "${parts[@]}"; do
    if [[ $range =~ ^([0-9]+)-([0-9]+)$ ]]; then
      lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
      width=${#lo}
      if ((10#$lo > 10#$hi)); then
        echo "hostlist.sh: range $range in '$name' goes down" >&2
        exit 2
      fi
      for ((n = 10#$lo; n <= 10#$hi; n++)); do
        expand_one "$prefix$(printf "%0${width}d" "$n")$suffix"
      done
    elif [[ $range =~ ^[0-9]+$ ]]; then
      expand_one "$prefix$range$suffix"
    else
      echo "hostlist.sh: '$range' in '$name' is not a number or a range like 01-03" >&2
      exit 2
    fi
  done
}

if [[ $# -ne 1 || -z $1 ]]; then
  echo "usage: hostlist.sh HOSTLIST   (e.g. 'node[01-03,07]')" >&2
  exit 2
fi
while IFS= read -r entry; do
  expand_one "$entry"
done < <(split_top "$1")
