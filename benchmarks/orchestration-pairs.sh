#!/bin/bash
# Pairs of `bench orchestration` runs, the base commit's jar first, then this tree's, in three sittings of five.
# BASE=/path/to/worktree-of-base CURRENT=. [SITTINGS=3] [EXTRA=/path/to/a-third-tree] benchmarks/orchestration-pairs.sh
# (each built with mvn package; EXTRA, when set, runs after CURRENT in each pair, labelled extra)
# Both sides get the same explicit sizes (SIZES), whatever defaults their jars have; the defaults
# changed (warm JIT), and a base jar with the old ones would otherwise measure cold code.
SIZES="${SIZES:---warmup-groups=50000 --groups=150000 --rounds=3 --latency-groups=500}"
J="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
FLAGS="-Xms256m -Xmx2g --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow"
for sitting in $(seq 1 "${SITTINGS:-3}"); do
  echo "sitting $sitting $(date -u +%H:%M:%S)"
  for pair in 1 2 3 4 5; do
    for side in base cur ${EXTRA:+extra}; do
      case $side in
        base) dir=${BASE:?set BASE to a worktree of the base commit, built} ;;
        cur) dir=${CURRENT:-.} ;;
        extra) dir=$EXTRA ;;
      esac
      load=$(cut -d' ' -f1 /proc/loadavg)
      # Since the CLI finds the benchmarks through ServiceLoader, its jar alone has no `bench`:
      # bin/rollout puts the benchmarks' jar on the class path (same heap and flags as below).
      if grep -q bench_jar $dir/bin/rollout; then
        r=$(cd $dir && ROLLOUT_JAVA_OPTS="-Xms256m -Xmx2g" bin/rollout bench orchestration $SIZES 2>/dev/null | grep RESULT)
      else
        r=$(cd $dir && $J $FLAGS -jar modules/cli/target/rollout-cli.jar bench orchestration $SIZES 2>/dev/null | grep RESULT)
      fi
      g=$(echo "$r" | grep -o "pipeline_groups_per_s=[0-9.]*" | cut -d= -f2)
      p50=$(echo "$r" | grep -o "added_p50_ms=[0-9.]*" | cut -d= -f2)
      p99=$(echo "$r" | grep -o "added_p99_ms=[0-9.]*" | cut -d= -f2)
      echo "$sitting $pair $side $g $load $p50 $p99"
    done
  done
done
