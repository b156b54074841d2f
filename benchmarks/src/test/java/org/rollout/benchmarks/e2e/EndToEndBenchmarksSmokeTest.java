package org.rollout.benchmarks.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Each end-to-end benchmark runs one tiny iteration and prints one parseable line that carries
 * every flag. Nothing is measured or compared here: the settings are far too small to mean
 * anything, and timings are never asserted.
 */
class EndToEndBenchmarksSmokeTest {
    private record Run(int exit, String out, String log) {}

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        int exit = EndToEndBenchmarks.run(
                List.of(args),
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(log, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), log.toString(StandardCharsets.UTF_8));
    }

    /** Runs {@code name} with {@code flags} and returns its summary line's pairs, checking the common shape. */
    private static Map<String, String> summary(String name, String... flags) {
        String[] args = new String[flags.length + 1];
        args[0] = name;
        System.arraycopy(flags, 0, args, 1, flags.length);
        Run r = run(args);
        assertThat(r.exit()).as(r.log()).isZero();
        assertThat(r.out().lines().toList()).as("exactly one summary line").hasSize(1);
        Map<String, String> values = SummaryLine.parse(r.out());
        assertThat(values.get("bench")).isEqualTo(name);
        assertThat(values.get("met")).isIn("yes", "no");
        EndToEndBenchmark bench = EndToEndBenchmarks.named(name).orElseThrow();
        for (Flag f : bench.flags()) {
            assertThat(values).as("the line carries --" + f.name()).containsKey(f.name());
        }
        for (int i = 0; i < flags.length; i += 2) {
            assertThat(values).containsEntry(flags[i].substring(2), flags[i + 1]);
        }
        return values;
    }

    @Test
    void orchestrationRunsOnceAndPrintsItsRatioAndAddedLatency() {
        Map<String, String> v = summary(
                "orchestration",
                "--groups",
                "4",
                "--warmup-groups",
                "1",
                "--latency-groups",
                "3",
                "--group-size",
                "2",
                "--concurrency",
                "2",
                "--batch",
                "2");
        assertThat(v)
                .containsKeys("ratio", "pipeline_groups_per_s", "plain_groups_per_s", "added_p50_ms", "added_p99_ms");
    }

    @Test
    void asyncRunsBothModesOnceAndPrintsTheirTimesAndUtilisation() {
        Map<String, String> v = summary(
                "async",
                "--servers",
                "1",
                "--steps",
                "2",
                "--group-size",
                "2",
                "--batch",
                "1",
                "--concurrency",
                "2",
                "--lengths",
                "fixed:length=3",
                "--decode-base-us",
                "0",
                "--step-cost-ms",
                "0");
        assertThat(v).containsKeys("ratio", "sync_s", "async_s", "sync_utilisation", "async_utilisation");
    }

    @Test
    void interruptRunsBothModesOnceAndPrintsKeptAndGeneratedTokens() {
        Map<String, String> v = summary(
                "interrupt",
                "--servers",
                "1",
                "--concurrency",
                "2",
                "--lengths",
                "fixed:length=20",
                "--decode-base-us",
                "1000",
                "--update-interval-s",
                "0.2",
                "--duration-s",
                "0.6");
        assertThat(v)
                .containsKeys(
                        "ratio",
                        "resume_kept_tokens_per_s",
                        "discard_kept_tokens_per_s",
                        "resume_generated_tokens_per_s",
                        "discard_thrown_away_tokens");
    }

    @Test
    void weightsRunsOnceAndPrintsTheUpdateLatency() {
        Map<String, String> v = summary("weights", "--servers", "2", "--updates", "2", "--warmup-updates", "0");
        assertThat(v).containsKeys("p50_ms", "p99_ms", "health_fanout_p50_ms").containsEntry("failed_updates", "0");
    }

    /**
     * The singletons' benchmark runs the real coordinator, collector and weight version against
     * simulated runners and servers: every part once, tiny, and every figure is reported; the
     * weight fan-out itself checks that each timed publish reached every runner and server.
     */
    @Test
    void singletonsRunsEveryPartAndReportsEachSaturationPoint() {
        Map<String, String> v = summary(
                "singletons",
                "--runners",
                "3",
                "--capacity",
                "2",
                "--batch",
                "4",
                "--rows",
                "2",
                "--tokens",
                "64",
                "--window",
                "8",
                "--warmup-groups",
                "20",
                "--groups",
                "40",
                "--wv-runners",
                "3",
                "--wv-servers",
                "5",
                "--publishes",
                "2");
        assertThat(v)
                .containsKeys(
                        "coordinator_r3_per_s",
                        "collector_t64_groups_per_s",
                        "collector_t64_mb_per_s",
                        "pipeline_r3_groups_per_s",
                        "wv_n3_m5_p50_ms",
                        "wv_n3_m5_p99_ms",
                        "wv_n3_m5_servers_p99_ms");
        assertThat(Double.parseDouble(v.get("coordinator_r3_per_s"))).isPositive();
        assertThat(Double.parseDouble(v.get("collector_t64_mb_per_s"))).isPositive();
        assertThat(Double.parseDouble(v.get("pipeline_r3_groups_per_s"))).isPositive();
        Run bad = run("singletons", "--parts", "collector,router");
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.log()).contains("--parts: unknown part 'router'");
    }

    /**
     * The remote collector over plain TCP and over TLS in one run ({@code --transport}): groups
     * above the threshold cross on the data plane, over TLS with the stores gen-keystores.sh made
     * for the run, and the ratio between the two is reported.
     */
    @Test
    @org.junit.jupiter.api.Timeout(300)
    void singletonsMeasuresTheRemoteCollectorOverPlainTcpAndTls() {
        Run r = run(
                "singletons",
                "--parts",
                "collector",
                "--collector-remote",
                "yes",
                "--transport",
                "tcp,tls-tcp",
                "--batch",
                "4",
                "--rows",
                "4",
                "--tokens",
                "4096",
                "--window",
                "8",
                "--warmup-groups",
                "8",
                "--groups",
                "20");
        assertThat(r.exit()).as(r.log()).isZero();
        assertThat(r.log())
                .contains("tcp: data plane (plain TCP)")
                .contains("tls-tcp: data plane (TLS)")
                .contains("TLS data plane / plain TCP data plane = ");
        Map<String, String> v = SummaryLine.parse(r.out());
        assertThat(Double.parseDouble(v.get("collector_t4096_tls_tcp_mb_per_s")))
                .isPositive();
        assertThat(Double.parseDouble(v.get("collector_t4096_tls_over_plain"))).isPositive();
        Run bad = run("singletons", "--parts", "collector", "--transport", "udp");
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.log()).contains("--transport: unknown transport 'udp'");
    }

    /**
     * One trainer rank's collector ({@code --ranks}): the last rank's, fed its own task ids, forming
     * batches of its share of a step, measured against its share of the fleet's needs; a number of
     * ranks that does not divide the batch is refused, naming both flags.
     */
    @Test
    @org.junit.jupiter.api.Timeout(120)
    void singletonsMeasuresOneTrainerRanksCollectorAtItsShare() {
        Run r = run(
                "singletons",
                "--parts",
                "collector",
                "--ranks",
                "2",
                "--batch",
                "4",
                "--rows",
                "2",
                "--tokens",
                "64",
                "--window",
                "8",
                "--warmup-groups",
                "8",
                "--groups",
                "40");
        assertThat(r.exit()).as(r.log()).isZero();
        assertThat(r.log()).contains("rank 1 of 2, batches of 2").contains("its need of 1563 groups/s");
        Map<String, String> v = SummaryLine.parse(r.out());
        assertThat(v).containsEntry("collector_ranks", "2");
        assertThat(Double.parseDouble(v.get("collector_t64_over_rank_need"))).isPositive();
        Run bad = run("singletons", "--parts", "collector", "--ranks", "3", "--batch", "4");
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.log()).contains("--ranks 3 must be at most 256 and divide --batch 4");
    }

    /**
     * The cluster variants: the coordinator over the replicated ledger of three cluster nodes in
     * this JVM, and the collector taking its groups from another node (Kryo over Artery TCP).
     */
    @Test
    @org.junit.jupiter.api.Timeout(240)
    void singletonsRunsTheReplicatedLedgerAndTheRemoteCollector() {
        Map<String, String> v = summary(
                "singletons",
                "--parts",
                "coordinator,collector",
                "--ledger-nodes",
                "3",
                "--ledger-layouts",
                "single,split",
                "--collector-remote",
                "yes",
                "--runners",
                "2",
                "--capacity",
                "2",
                "--batch",
                "4",
                "--rows",
                "2",
                "--tokens",
                "64",
                "--window",
                "8",
                "--warmup-groups",
                "8",
                "--groups",
                "20");
        assertThat(Double.parseDouble(v.get("coordinator_r2_single_per_s"))).isPositive();
        assertThat(Double.parseDouble(v.get("coordinator_r2_split_per_s"))).isPositive();
        assertThat(Double.parseDouble(v.get("coordinator_r2_split_over_single")))
                .isPositive();
        assertThat(Double.parseDouble(v.get("collector_t64_mb_per_s"))).isPositive();
        Run burst = run(
                "singletons", "--parts", "coordinator", "--runners", "10", "--capacity", "8", "--warmup-groups", "5");
        assertThat(burst.exit()).isEqualTo(2);
        assertThat(burst.log()).contains("--warmup-groups 5 must be at least the groups in flight", "= 80");
        assertThat(burst.out()).isEmpty();
    }

    @Test
    void handoffPullsThroughARealGatewayAndPrintsItsRatioToTheRawSocket() {
        Map<String, String> v = summary(
                "handoff", "--sizes-mb", "1", "--rounds", "1", "--warmup", "0", "--python", "none", "--java", "both");
        // The Java trainer in a JVM of its own, and in this one beside the gateway.
        assertThat(v)
                .containsKeys(
                        "java_mb_per_s_1mb",
                        "java_loopback_mb_per_s_1mb",
                        "java_to_loopback_1mb",
                        "java_peak_heap_batches_1mb",
                        "java_inproc_mb_per_s_1mb",
                        "java_inproc_to_loopback_1mb");
        assertThat(Double.parseDouble(v.get("java_to_loopback_1mb"))).isPositive();
        assertThat(Double.parseDouble(v.get("java_inproc_to_loopback_1mb"))).isPositive();
        assertThat(Long.parseLong(v.get("bytes_1mb"))).isGreaterThan(900_000L);
    }

    @Test
    void anUnknownBenchmarkOrFlagOrABadValueExitsWithTwoSayingWhy() {
        Run unknown = run("quickest");
        assertThat(unknown.exit()).isEqualTo(2);
        assertThat(unknown.log())
                .contains(
                        "unknown benchmark 'quickest' (known: orchestration, async, interrupt, weights, scaleout, singletons, handoff, launch, python-workflow, routing, or all)");
        Run flag = run("async", "--severs", "2");
        assertThat(flag.exit()).isEqualTo(2);
        assertThat(flag.log()).contains("bench async: unknown flag --severs (known: --servers,");
        Run value = run("weights", "--servers", "0");
        assertThat(value.exit()).isEqualTo(2);
        assertThat(value.log()).contains("bench weights: --servers must be an integer >= 1, got '0'");
        Run lengths = run("interrupt", "--lengths", "zipf:s=2", "--duration-s", "0.1");
        assertThat(lengths.exit()).isEqualTo(2);
        assertThat(lengths.log()).contains("bench interrupt: --lengths: output length distribution 'zipf:s=2'");
        // scaleout starts node JVMs from the CLI; without its main class on the class path it says how
        // to run it (this module's tests have the CLI: a main class that is not there stands for it).
        Run scaleout = run("scaleout", "--nodes", "1", "--node-main", "org.rollout.cli.NotOnThisClassPath");
        assertThat(scaleout.exit()).isEqualTo(1);
        assertThat(scaleout.log()).contains("run it as bin/rollout bench scaleout");
        Run badNodes = run("scaleout", "--nodes", "1,x", "--node-main", EndToEndBenchmarks.class.getName());
        assertThat(badNodes.log()).contains("--nodes must list cluster sizes from 1 to 8, e.g. 1,2,3; got '1,x'");
        Run equals = run("weights", "--servers=0");
        assertThat(equals.log()).contains("bench weights: --servers must be an integer >= 1, got '0'");
        Run stray = run("weights", "servers", "2");
        assertThat(stray.exit()).isEqualTo(2);
        assertThat(stray.log()).contains("bench weights: unexpected argument 'servers' (flags are --name value)");
        Run noValue = run("weights", "--servers");
        assertThat(noValue.exit()).isEqualTo(2);
        assertThat(noValue.log()).contains("bench weights: ", "--servers");
        Run all = run("all", "--servers", "2");
        assertThat(all.exit()).isEqualTo(2);
        assertThat(all.log()).contains("bench all runs every benchmark with its defaults and takes no flags");
    }

    /**
     * Every strategy on every workload, tiny: two servers, groups of 2, three-turn episodes, a server
     * crashed in the failover run. Every group and episode completes with full answers, the engine's
     * counts of cached tokens are the servers' own where no server crashed, and a bad strategy list
     * is refused before anything starts.
     */
    @Test
    void routingRunsEveryStrategyOnEveryWorkloadAndLosesNothingWhenAServerDies() {
        Map<String, String> v = summary(
                "routing",
                "--servers",
                "2",
                "--group-size",
                "2",
                "--prompt-tokens",
                "64",
                "--answer-tokens",
                "8",
                "--rlvr-groups",
                "4",
                "--rlvr-concurrency",
                "2",
                "--turns",
                "3",
                "--agent-prompt-tokens",
                "64",
                "--observation-tokens",
                "32",
                "--tool-ms",
                "5",
                "--agent-episodes",
                "4",
                "--agent-concurrency",
                "2",
                "--decode-base-us",
                "1000",
                "--time-scale",
                "1");
        for (String w : List.of("rlvr", "agent", "failover")) {
            for (String s : List.of("round_robin", "least_requests", "group_affinity", "prefix_aware")) {
                String k = w + "_" + s;
                assertThat(Double.parseDouble(v.get(k + "_tokens_per_s"))).as(k).isPositive();
                assertThat(v).containsKeys(k + "_ratio", k + "_hit_rate", k + "_p50_s", k + "_p99_s");
                if (!w.equals("failover")) {
                    assertThat(v.get(k + "_hit_rate")).as(k).isEqualTo(v.get(k + "_server_hit_rate"));
                }
            }
        }
        assertThat(v).containsEntry("rlvr_least_requests_ratio", "1").containsEntry("met_failover_nothing_lost", "yes");
        for (String s : List.of("round_robin", "least_requests", "group_affinity", "prefix_aware")) {
            assertThat(v)
                    .containsEntry("failover_" + s + "_completed", "4")
                    .containsEntry("failover_" + s + "_failed", "0")
                    .containsEntry("failover_" + s + "_short_answers", "0");
        }
        assertThat(v.get("winner")).isIn("round_robin", "least_requests", "group_affinity", "prefix_aware");
        Run bad = run("routing", "--strategies", "round_robin,prefix_aware");
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.log()).contains("--strategies must include least_requests");
    }

    @Test
    void launchStartsServerProcessesAndPrintsItsTimesAndRatios() {
        Map<String, String> v = summary("launch", "--servers", "1", "--rounds", "1");
        assertThat(Double.parseDouble(v.get("launch_to_first_generation_p50_ms")))
                .isGreaterThanOrEqualTo(Double.parseDouble(v.get("launch_to_health_p50_ms")));
        assertThat(Double.parseDouble(v.get("java_version_p50_ms"))).isPositive();
        assertThat(v).containsKeys("ratio_health_to_jvm", "ratio_first_generation_to_jvm");
    }
}
