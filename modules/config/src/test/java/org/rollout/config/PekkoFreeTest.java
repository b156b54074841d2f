package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * The config module is what every module may depend on, so its class path (its dependencies and
 * the test-scope ones, which add nothing of Pekko's) holds no Pekko, no Scala and none of the
 * engine's runtime modules.
 */
class PekkoFreeTest {

    @Test
    void noPekkoScalaOrRuntimeModuleClassIsLoadable() {
        for (String name : List.of(
                "org.apache.pekko.actor.ActorSystem",
                "org.apache.pekko.actor.typed.ActorSystem",
                "org.apache.pekko.cluster.Cluster",
                "scala.Predef",
                "org.rollout.core.GroupOptions",
                "org.rollout.inference.RemoteInferenceEngine",
                "org.rollout.cluster.RolloutCoordinator",
                "org.rollout.agent.AgentOptions")) {
            assertThatThrownBy(() -> Class.forName(name, false, PekkoFreeTest.class.getClassLoader()))
                    .as(name)
                    .isInstanceOf(ClassNotFoundException.class);
        }
    }

    @Test
    void noJarOnTheClassPathIsPekkosOrScalas() throws IOException {
        List<String> jars = new ArrayList<>();
        for (URL u : Collections.list(PekkoFreeTest.class.getClassLoader().getResources("META-INF/MANIFEST.MF"))) {
            jars.add(u.toString());
        }
        assertThat(jars).as("jars on the class path").isNotEmpty();
        assertThat(jars)
                .filteredOn(j -> {
                    String l = j.toLowerCase(Locale.ROOT);
                    return l.contains("pekko") || l.contains("scala-library") || l.contains("/org/scala-lang/");
                })
                .as("Pekko or Scala jars on the config module's class path")
                .isEmpty();
    }

    @Test
    void theConfigurationLoadsWithoutThem() {
        // Everything of a load runs on this class path: reference.conf, validation, the sections.
        assertThat(RolloutConfig.load(null, List.of("rollout.servers=127.0.0.1:30000"))
                        .inferenceConfig()
                        .addresses())
                .containsExactly(new ServerAddress("127.0.0.1", 30000));
    }
}
