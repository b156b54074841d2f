package org.rollout.config;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * {@code rollout.server_file} and {@code rollout.server_file_interval}: a file of inference servers
 * re-read while the node runs (docs/inference.md, "Servers at run time"). Checked at load; read by
 * {@link RolloutSettings#serverFile()} and {@link RolloutSettings#serverFileInterval()}.
 */
final class ServerFileSection {
    private ServerFileSection() {}

    static final String ALLOWED_FILE = "a file path (one host:port per line, # comments), or null for none";

    static void check(ConfigReader r) {
        String file = r.string("rollout.server_file", true, ALLOWED_FILE);
        if (file != null) {
            if (file.isBlank()) {
                r.error("rollout.server_file", "\"" + file + "\"", ALLOWED_FILE);
            } else {
                try {
                    Path.of(file);
                } catch (InvalidPathException e) {
                    r.error("rollout.server_file", file, ALLOWED_FILE + " (" + e.getMessage() + ")");
                }
            }
        }
        r.seconds("rollout.server_file_interval", true);
    }
}
