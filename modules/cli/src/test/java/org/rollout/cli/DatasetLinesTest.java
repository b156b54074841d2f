package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;
import org.rollout.cluster.JsonlPromptSource;
import org.rollout.config.OnMalformed;
import org.slf4j.LoggerFactory;

class DatasetLinesTest {
    @TempDir
    Path dir;

    private Path unclosedObjectOnLineTwo() throws IOException {
        return Files.writeString(dir.resolve("train.jsonl"), "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"\n");
    }

    @Test
    void aSkippedLinesWarningSaysTheFileTheLineAndTheParseProblemOnly() throws IOException {
        Path f = unclosedObjectOnLineTwo();
        Logger logger = (Logger) LoggerFactory.getLogger(JsonlPromptSource.class);
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.start();
        logger.addAppender(captured);
        try {
            DatasetLines.read("rollout.dataset.train", List.of(f), false, null, OnMalformed.SKIP);
        } finally {
            logger.detachAppender(captured);
        }
        List<String> warnings =
                captured.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        assertThat(warnings)
                .contains("skipping malformed dataset line " + f
                        + ":2: not valid JSON: Unexpected end-of-input: expected close marker for Object");
        assertThat(String.join("\n", warnings)).doesNotContain("Source", "REDACTED", "column");
    }

    @Test
    void aMalformedLineRefusedWithOnMalformedFailNamesTheKeyFileAndLineWithoutTheParsersLocation() throws IOException {
        Path f = unclosedObjectOnLineTwo();
        assertThatThrownBy(() -> DatasetLines.read("rollout.dataset.eval", List.of(f), false, null, OnMalformed.FAIL))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("rollout.dataset.eval")
                .hasMessageContaining(f + ":2: not valid JSON: Unexpected end-of-input")
                .message()
                .doesNotContain("Source", "REDACTED");
    }
}
