package org.rollout.benchmarks.e2e;

import java.util.Objects;

/**
 * One workload parameter of an end-to-end benchmark: {@code --name value} on the command line,
 * printed back as {@code name=value} in the summary line so that a point can be re-run with other
 * settings. Immutable.
 *
 * @param name the flag without its dashes, e.g. {@code step-cost-ms}
 * @param defaultValue the value when the flag is not given
 * @param description one sentence for {@code --help}
 */
public record Flag(String name, String defaultValue, String description) {
    public Flag {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(defaultValue, "defaultValue");
        Objects.requireNonNull(description, "description");
        if (!name.matches("[a-z][a-z0-9-]*")) {
            throw new IllegalArgumentException("a flag name is lower-case words joined by '-', got '" + name + "'");
        }
    }
}
