package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Grafana dashboard (deploy/grafana/rollout-dashboard.json) is valid JSON and queries only
 * metrics the engine serves ({@link MetricCatalog}); docs/observability.md documents every one.
 */
class ObservabilityDocsTest {
    private static final Path ROOT = Path.of("../..");
    private static final Pattern METRIC = Pattern.compile("\\brollout_[a-z0-9_]+");

    private static String family(String name) {
        for (String suffix : List.of("_bucket", "_count", "_sum", "_max")) {
            String base = name.endsWith(suffix) ? name.substring(0, name.length() - suffix.length()) : null;
            if (base != null && MetricCatalog.names().contains(base)) {
                return base;
            }
        }
        return name;
    }

    @Test
    void theGrafanaDashboardQueriesOnlyServedMetrics() throws Exception {
        JsonNode dashboard = new ObjectMapper()
                .readTree(ROOT.resolve("deploy/grafana/rollout-dashboard.json").toFile());
        assertThat(dashboard.path("panels")).isNotEmpty();
        List<String> used = new ArrayList<>();
        for (JsonNode panel : dashboard.path("panels")) {
            assertThat(panel.path("title").asText()).isNotBlank();
            assertThat(panel.path("targets")).as(panel.path("title").asText()).isNotEmpty();
            for (JsonNode target : panel.path("targets")) {
                Matcher m = METRIC.matcher(target.path("expr").asText());
                while (m.find()) {
                    used.add(family(m.group()));
                }
            }
        }
        assertThat(used).isNotEmpty();
        assertThat(used).allSatisfy(name -> assertThat(MetricCatalog.names()).contains(name));
    }

    @Test
    void everyMetricIsDocumented() throws Exception {
        String doc = Files.readString(ROOT.resolve("docs/observability.md"));
        for (String name : MetricCatalog.names()) {
            assertThat(doc).as("docs/observability.md documents %s", name).contains("`" + name + "`");
        }
        Matcher m = METRIC.matcher(doc);
        while (m.find()) {
            if (m.group().endsWith("_")) {
                continue; // a prefix: rollout_group_*, rollout_…
            }
            assertThat(MetricCatalog.names())
                    .as("a metric named in docs/observability.md")
                    .contains(family(m.group()));
        }
    }
}
