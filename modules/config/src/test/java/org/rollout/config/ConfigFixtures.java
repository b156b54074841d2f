package org.rollout.config;

import com.typesafe.config.ConfigFactory;
import java.util.List;

/** Loading settings in tests: from overrides, or from HOCON text standing for a file. */
final class ConfigFixtures {
    private ConfigFixtures() {}

    /** Defaults with {@code overrides} applied, as the command line would. */
    static RolloutSettings load(String... overrides) {
        return RolloutConfig.load(null, List.of(overrides));
    }

    /** {@code hocon} as the user's file, over the defaults. */
    static RolloutSettings hocon(String hocon) {
        return RolloutConfig.load(ConfigFactory.parseString(hocon));
    }
}
