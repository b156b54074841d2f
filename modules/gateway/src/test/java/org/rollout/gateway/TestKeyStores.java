package org.rollout.gateway;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Self-signed key stores for TLS tests, made with the JDK's keytool. */
final class TestKeyStores {
    private TestKeyStores() {}

    /** A PKCS12 store in {@code dir} with an EC key and a certificate for 127.0.0.1, valid for two days. */
    static Path selfSigned(Path dir, String password) throws IOException, InterruptedException {
        Path store = dir.resolve("gateway.p12");
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        Process p = new ProcessBuilder(List.of(
                        keytool.toString(),
                        "-genkeypair",
                        "-alias",
                        "gateway",
                        "-keyalg",
                        "EC",
                        "-groupname",
                        "secp256r1",
                        "-dname",
                        "CN=127.0.0.1",
                        "-ext",
                        "san=ip:127.0.0.1",
                        "-validity",
                        "2",
                        "-storetype",
                        "PKCS12",
                        "-keystore",
                        store.toString(),
                        "-storepass",
                        password,
                        "-keypass",
                        password))
                .redirectErrorStream(true)
                .start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("keytool did not finish within 60 s");
        }
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new IllegalStateException("keytool failed with exit code " + p.exitValue() + ": " + output);
        }
        return store;
    }
}
