package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.config.ConfigFixtures.load;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.rollout.api.InvalidConfigException;

/** {@code rollout.launch}: read, substituted per server, and refused naming the key. */
class ServerLaunchTest {

    @Test
    void anEightGpuNodeOfSglangServersFromOneBlock() {
        ServerLaunch l = load(
                        "rollout.launch.servers=8",
                        "rollout.launch.command=\"python3 -m sglang.launch_server --model-path {model_path}"
                                + " --host {host} --port {port}\"",
                        "rollout.launch.base_port=30000",
                        "rollout.launch.model_path=/models/qwen",
                        "rollout.launch.health_timeout=90s",
                        "rollout.fileroot=/tmp/runs")
                .launch();
        assertThat(l.servers()).isEqualTo(8);
        assertThat(l.commandOf(3, 30003))
                .containsExactly(
                        "python3",
                        "-m",
                        "sglang.launch_server",
                        "--model-path",
                        "/models/qwen",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        "30003");
        assertThat(l.gpusOf(3)).isEqualTo("3");
        assertThat(l.logDir()).isEqualTo(Path.of("/tmp/runs/server-logs"));
        assertThat(l.healthTimeout()).isEqualTo(Duration.ofSeconds(90));
        assertThat(l.maxRestarts()).isEqualTo(5);
    }

    @Test
    void gpusAreHandedOutPerServerInOrder() {
        ServerLaunch l = load(
                        "rollout.launch.servers=2",
                        "rollout.launch.command=[\"srv\", \"--gpu={gpu}\", \"--i={index}\"]",
                        "rollout.launch.gpus=\"4,5,6,7\"",
                        "rollout.launch.gpus_per_server=2")
                .launch();
        assertThat(l.commandOf(1, 1)).containsExactly("srv", "--gpu=6,7", "--i=1");
        assertThat(l.gpusOf(0)).isEqualTo("4,5");
        ServerLaunch none = load("rollout.launch.gpus_per_server=0").launch();
        assertThat(none.gpusOf(0)).isEmpty();
        assertThat(none.servers()).isZero();
    }

    @Test
    void badValuesAreRefusedNamingTheKey() {
        assertThatThrownBy(() -> load("rollout.launch.servers=2"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.launch.command'")
                .hasMessageContaining("a non-empty command when rollout.launch.servers > 0");
        assertThatThrownBy(() -> load("rollout.launch.command=\"srv --port {prot}\""))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.launch.command'")
                .hasMessageContaining("(unknown: {prot})");
        assertThatThrownBy(() -> load(
                        "rollout.launch.servers=3", "rollout.launch.command=srv", "rollout.launch.gpus=[\"0\", \"1\"]"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.launch.gpus'")
                .hasMessageContaining("at least servers x gpus_per_server = 3 GPU ids");
        assertThatThrownBy(() -> load("rollout.launch.servers=-1"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.launch.servers'");
        assertThatThrownBy(
                        () -> load("rollout.launch.restart_backoff_initial=5", "rollout.launch.restart_backoff_max=1"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.launch.restart_backoff_max'");
    }
}
