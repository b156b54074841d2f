package org.rollout.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigParseOptions;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The stores {@code cluster-config/gen-keystores.sh} makes (a CA, a node key store it signed, a
 * trust store holding the CA, a self-signed rogue key store), made into a directory for tests and
 * benchmarks, and {@code cluster-config/tls.conf} resolved over them: Artery over {@code tls-tcp}
 * with mutual authentication, as a node of the cluster runs it.
 */
public final class TlsStores {
    /** The password of every store. */
    public static final String PASSWORD = "tls-stores-password";

    private final Path dir;

    private TlsStores(Path dir) {
        this.dir = dir;
    }

    /** Runs {@code gen-keystores.sh} into {@code dir} with this JVM's keytool. */
    public static TlsStores generate(Path dir) throws IOException, InterruptedException {
        Path log = Files.createTempFile("gen-keystores", ".out");
        try {
            ProcessBuilder pb = new ProcessBuilder(
                            "bash", clusterConfig().resolve("gen-keystores.sh").toString(), dir.toString())
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile());
            pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
            pb.environment().put("ROLLOUT_TLS_PASSWORD", PASSWORD);
            Process p = pb.start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("gen-keystores.sh did not finish within 120 s");
            }
            if (p.exitValue() != 0) {
                throw new IOException("gen-keystores.sh failed (exit " + p.exitValue() + "): "
                        + Files.readString(log, StandardCharsets.UTF_8));
            }
            return new TlsStores(dir);
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** The node key store, signed by the cluster's CA. */
    public Path node() {
        return dir.resolve("node.p12");
    }

    /** A self-signed key store with the node's subject, which the trust store does not accept. */
    public Path rogue() {
        return dir.resolve("rogue.p12");
    }

    /** The trust store: the cluster's CA alone. */
    public Path trustStore() {
        return dir.resolve("truststore.p12");
    }

    /** {@code cluster-config/tls.conf} with the node key store. */
    public Config tlsTcp() {
        return tlsTcp(node());
    }

    /** {@code cluster-config/tls.conf} with {@code keyStore} (and the CA's trust store), resolved. */
    public Config tlsTcp(Path keyStore) {
        return ConfigFactory.parseMap(Map.of(
                        "ROLLOUT_TLS_KEY_STORE", keyStore.toString(),
                        "ROLLOUT_TLS_TRUST_STORE", trustStore().toString(),
                        "ROLLOUT_TLS_PASSWORD", PASSWORD))
                .withFallback(ConfigFactory.parseFile(
                        clusterConfig().resolve("tls.conf").toFile(),
                        ConfigParseOptions.defaults().setAllowMissing(false)))
                .resolve();
    }

    /** cluster-config/ of the repository, from the working directory upwards. */
    static Path clusterConfig() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("cluster-config/gen-keystores.sh"))) {
                return p.resolve("cluster-config");
            }
        }
        throw new IllegalStateException(
                "no cluster-config/gen-keystores.sh in " + Path.of("").toAbsolutePath() + " or any directory above it");
    }
}
