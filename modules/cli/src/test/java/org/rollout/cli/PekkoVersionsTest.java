package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.jar.Attributes;
import java.util.jar.Manifest;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.util.ManifestInfo;
import org.junit.jupiter.api.Test;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Pekko refuses to start an actor system whose core modules come in more than one version (and
 * warns "… you (perhaps indirectly) also depend on older versions of related artifacts …" where
 * that check is turned off). This module's test class path is the widest of the engine's (every
 * module a node runs, with Pekko Management and Pekko HTTP), so a dependency that drags in another
 * version of a Pekko artifact fails the build here, naming the artifacts and their versions.
 */
class PekkoVersionsTest {

    /** The modules Pekko's own start-up check compares: every artifact of Pekko's core BOM. */
    static final Set<String> CORE = Set.of(
            "pekko-actor",
            "pekko-actor-testkit-typed",
            "pekko-actor-typed",
            "pekko-cluster",
            "pekko-cluster-metrics",
            "pekko-cluster-sharding",
            "pekko-cluster-sharding-typed",
            "pekko-cluster-tools",
            "pekko-cluster-typed",
            "pekko-coordination",
            "pekko-discovery",
            "pekko-distributed-data",
            "pekko-testkit",
            "pekko-multi-node-testkit",
            "pekko-osgi",
            "pekko-persistence",
            "pekko-persistence-query",
            "pekko-persistence-shared",
            "pekko-persistence-testkit",
            "pekko-persistence-typed",
            "pekko-pki",
            "pekko-protobuf",
            "pekko-protobuf-v3",
            "pekko-remote",
            "pekko-serialization-jackson",
            "pekko-slf4j",
            "pekko-stream",
            "pekko-stream-testkit",
            "pekko-stream-typed");

    static boolean isCore(String artifact) {
        return CORE.contains(artifact);
    }

    /** Pekko HTTP and the parser it ships with, released together. */
    static boolean isHttp(String artifact) {
        return artifact.startsWith("pekko-http") || artifact.equals("pekko-parsing");
    }

    /** Pekko Management: the endpoint, Cluster Bootstrap and the discovery methods it adds. */
    static boolean isManagement(String artifact) {
        return artifact.startsWith("pekko-management") || artifact.startsWith("pekko-discovery-");
    }

    /** Artifact name to version of every Pekko jar on this class path, read from the jars' manifests. */
    static Map<String, String> pekkoArtifactsOnClassPath() throws IOException {
        Map<String, String> versions = new TreeMap<>();
        Enumeration<URL> manifests = PekkoVersionsTest.class.getClassLoader().getResources("META-INF/MANIFEST.MF");
        while (manifests.hasMoreElements()) {
            URL url = manifests.nextElement();
            Attributes main;
            try (InputStream in = url.openStream()) {
                main = new Manifest(in).getMainAttributes();
            }
            if (!"org.apache.pekko".equals(main.getValue("Implementation-Vendor-Id"))) {
                continue;
            }
            String title = main.getValue("Implementation-Title");
            String version = main.getValue("Implementation-Version");
            if (title != null && version != null) {
                versions.merge(title, version, (a, b) -> a.equals(b) ? a : a + " and " + b);
            }
        }
        return versions;
    }

    /**
     * Empty when the family's artifacts share one version, else a line per version naming the
     * artifacts at it.
     */
    static List<String> mixedVersions(Map<String, String> artifacts, Predicate<String> family) {
        Map<String, Set<String>> byVersion = new TreeMap<>();
        artifacts.forEach((artifact, version) -> {
            if (family.test(artifact)) {
                byVersion.computeIfAbsent(version, v -> new TreeSet<>()).add(artifact);
            }
        });
        List<String> lines = new ArrayList<>();
        if (byVersion.size() > 1) {
            byVersion.forEach((version, names) -> lines.add(version + ": " + String.join(", ", names)));
        }
        return lines;
    }

    @Test
    void everyPekkoCoreArtifactOnTheNodesClassPathHasOneVersion() throws IOException {
        Map<String, String> artifacts = pekkoArtifactsOnClassPath();
        assertThat(artifacts)
                .as("the Pekko jars on the class path, read from their manifests")
                .containsKeys("pekko-actor", "pekko-cluster", "pekko-discovery", "pekko-stream");
        assertThat(mixedVersions(artifacts, PekkoVersionsTest::isCore))
                .as("Pekko core modules at more than one version (align them through the pekko-bom import in"
                        + " the parent pom.xml)")
                .isEmpty();
        assertThat(mixedVersions(artifacts, PekkoVersionsTest::isHttp))
                .as("Pekko HTTP modules at more than one version")
                .isEmpty();
        assertThat(mixedVersions(artifacts, PekkoVersionsTest::isManagement))
                .as("Pekko Management modules at more than one version")
                .isEmpty();
    }

    @Test
    void pekkosOwnStartUpCheckFindsOneVersionAndAnActorSystemStartsWithTheCheckFailingOnMixedVersions() {
        ActorSystem system = ActorSystem.create(
                "pekko-versions",
                ConfigFactory.parseString("pekko.fail-mixed-versions = on\npekko.loglevel = WARNING")
                        .withFallback(ConfigFactory.load()));
        try {
            boolean same = ManifestInfo.get(system)
                    .checkSameVersion(
                            "Apache Pekko",
                            CollectionConverters.asScala(List.copyOf(CORE)).toList(),
                            false);
            assertThat(same)
                    .as("Pekko's ManifestInfo.checkSameVersion over its core modules")
                    .isTrue();
        } finally {
            system.terminate();
        }
    }

    @Test
    void aMixedCoreFamilyIsReportedNamingEachVersionsArtifacts() {
        Map<String, String> mixed = Map.of(
                "pekko-actor", "1.7.0",
                "pekko-cluster", "1.7.0",
                "pekko-discovery", "1.2.1",
                "pekko-http", "1.3.0",
                "pekko-management", "1.1.1");
        assertThat(mixedVersions(mixed, PekkoVersionsTest::isCore))
                .containsExactly("1.2.1: pekko-discovery", "1.7.0: pekko-actor, pekko-cluster");
        assertThat(mixedVersions(mixed, PekkoVersionsTest::isHttp)).isEmpty();
        assertThat(mixedVersions(mixed, PekkoVersionsTest::isManagement)).isEmpty();
    }
}
