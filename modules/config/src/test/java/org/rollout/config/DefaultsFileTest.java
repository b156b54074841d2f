package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The release's conf/rollout.conf holds every known key, and uncommented it is exactly the defaults. */
class DefaultsFileTest {

    @Test
    void everyKnownKeyAppearsCommentedWithItsDocumentation() {
        String text = DefaultsFile.render();
        List<String> missing = new ArrayList<>();
        for (String key : KnownKeys.of(RolloutConfig.reference()).leaves()) {
            if (key.startsWith("eval_gconfig.")) {
                continue; // eval_gconfig takes gconfig's keys; the file shows eval_gconfig = {} itself
            }
            if (!text.contains("\n#" + key + " = ")) {
                missing.add(key);
            }
        }
        assertThat(missing).as("known keys absent from the defaults file").isEmpty();
        assertThat(text).contains("\n#rollout.consumer_batch_size = 1\n");
        // Each key's documentation from reference.conf comes with it.
        assertThat(text).contains("# Groups per training batch, and the unit of the staleness budget");
        // Nothing is set while every line stays commented.
        for (String line : text.split("\n")) {
            assertThat(line.isEmpty() || line.startsWith("#")).as(line).isTrue();
        }
    }

    @Test
    void uncommentedItParsesToTheDefaultsAndLoads(@TempDir Path dir) throws Exception {
        StringBuilder uncommented = new StringBuilder();
        for (String line : DefaultsFile.render().split("\n")) {
            if (line.matches("#[a-z_]+(\\.[a-z_]+)* = .*")) {
                uncommented.append(line.substring(1)).append('\n');
            }
        }
        Config parsed = ConfigFactory.parseString(uncommented.toString());
        Config reference = ConfigFactory.empty();
        for (String s : KnownKeys.SECTIONS) {
            reference = reference.withValue(s, RolloutConfig.reference().get(s));
        }
        assertThat(parsed.root().unwrapped()).isEqualTo(reference.root().unwrapped());

        // The commented file itself is a valid configuration that changes nothing.
        Path file = dir.resolve("rollout.conf");
        DefaultsFile.main(new String[] {file.toString()});
        assertThat(Files.readString(file)).isEqualTo(DefaultsFile.render());
        RolloutSettings settings = RolloutConfig.load(file, List.of(), ConfigFactory.empty());
        assertThat(settings.rollout().consumerBatchSize()).isEqualTo(1);
    }
}
