package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A port that another process listens on: each command says so in one line naming the port and
 * the setting that chose it, exits 1, and prints a stack trace only with {@code --debug}.
 */
@Timeout(180)
class PortInUseTest {
    private record Run(int exit, String out, String err) {}

    private ServerSocket taken;
    private int port;

    @TempDir
    Path dir;

    @BeforeEach
    void occupyAPort() throws IOException {
        taken = new ServerSocket();
        taken.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
        port = taken.getLocalPort();
    }

    @AfterEach
    void release() throws IOException {
        taken.close();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    private static Run run(String... args) {
        CommandLine cl = RolloutCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream capturedOut = new ByteArrayOutputStream();
        ByteArrayOutputStream capturedErr = new ByteArrayOutputStream();
        System.setOut(new PrintStream(capturedOut, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(capturedErr, true, StandardCharsets.UTF_8));
        try {
            int exit = cl.execute(args);
            return new Run(
                    exit,
                    out + capturedOut.toString(StandardCharsets.UTF_8),
                    err + capturedErr.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    /** Exit 1, exactly one line naming the port and each of {@code settings}, and no stack trace. */
    private void assertOneLine(Run r, String what, String... settings) {
        assertThat(r.exit()).as(r.err()).isEqualTo(1);
        List<String> lines =
                r.err().lines().filter(l -> l.contains("127.0.0.1:" + port)).toList();
        assertThat(lines).as(r.err()).hasSize(1);
        assertThat(lines.get(0)).contains("cannot listen on 127.0.0.1:" + port, what, "in use");
        assertThat(lines.get(0)).contains(settings);
        assertThat(lines.get(0)).doesNotContain("Exception");
        assertThat(r.err()).doesNotContain("\tat ", "Caused by");
    }

    private String[] local(String... more) {
        List<String> args = new java.util.ArrayList<>(
                List.of("local", "--steps", "1", "--servers", "1", "--no-status", "rollout.fileroot=" + dir));
        args.addAll(List.of(more));
        return args.toArray(String[]::new);
    }

    private String[] node(String... more) throws IOException {
        List<String> args = new java.util.ArrayList<>(
                List.of("node", "--demo", "rollout.servers=[\"127.0.0.1:9\"]", "rollout.fileroot=" + dir));
        args.addAll(List.of(more));
        for (String flag : List.of("--port", "--gateway-port")) {
            if (!args.contains(flag)) {
                args.addAll(List.of(flag, "" + freePort()));
            }
        }
        return args.toArray(String[]::new);
    }

    @Test
    void localWithItsMetricsPortTakenSaysSoInOneLineNamingRolloutMetricsPort() {
        assertOneLine(run(local("rollout.metrics.port=" + port)), "metrics", "rollout.metrics.port");
    }

    @Test
    void localWithTheAgentProxyPortTakenSaysSoInOneLineNamingRolloutAgentProxyPort() {
        assertOneLine(
                run(local("--workflow", "agent", "rollout.agent.proxy_port=" + port)),
                "agent proxy",
                "rollout.agent.proxy_port");
    }

    @Test
    void aNodeWithItsGatewayPortTakenSaysSoInOneLineBeforeSayingItIsUp() throws IOException {
        Run r = run(node("--gateway-port", "" + port));
        assertOneLine(r, "trainer gateway", "--gateway-port");
        assertThat(r.out()).doesNotContain("node up");
    }

    @Test
    void aNodeWithoutGatewayWithItsMetricsPortTakenSaysSoInOneLineNamingRolloutMetricsPort() throws IOException {
        Run r = run(node("--roles", "coordinator,rollout", "rollout.metrics.port=" + port));
        assertOneLine(r, "metrics", "rollout.metrics.port");
        assertThat(r.out()).doesNotContain("node up");
    }

    @Test
    void aNodeWithItsClusterPortTakenSaysSoInOneLineNamingPort() throws IOException {
        Run r = run(node("--port", "" + port));
        assertOneLine(r, "cluster", "--port", "pekko.remote.artery.canonical.port");
        assertThat(r.out()).doesNotContain("node up");
    }

    @Test
    void aNodeWithItsManagementPortTakenSaysSoInOneLineNamingManagementPort() throws IOException {
        Run r = run(node("--management-port", "" + port));
        assertOneLine(r, "management", "--management-port");
        assertThat(r.out()).doesNotContain("node up");
    }

    @Test
    void aNodeRunningAnAgentWithTheProxyPortTakenSaysSoInOneLineNamingRolloutAgentProxyPort() throws IOException {
        Run r = run(node("rollout.workflow=agent", "rollout.agent.proxy_port=" + port));
        assertOneLine(r, "agent proxy", "rollout.agent.proxy_port");
        assertThat(r.out()).doesNotContain("node up");
    }

    @Test
    void aModelServerWithItsPortTakenSaysSoOnceNamingPort() {
        Run r = run("model-server", "--port", "" + port);
        assertThat(r.exit()).as("exit; output: %s", r.out()).isEqualTo(1);
        assertThat(r.err().strip())
                .as("standard error; standard output: %s", r.out())
                .isEqualTo("model server: cannot listen on 127.0.0.1:" + port
                        + " (--port): the port is in use; set another port, or 0 for a free one");
    }

    @Test
    void debugAddsTheStackTraceToAPortInUse() throws IOException {
        Run r = run(node("--debug", "--gateway-port", "" + port));
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).contains("--gateway-port", "\tat ", "BindException");
    }
}
