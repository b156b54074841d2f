package org.rollout.cli;

import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import org.rollout.api.InvalidConfigException;
import org.rollout.cluster.JsonlPromptSource;
import org.rollout.config.OnMalformed;

/**
 * The dataset files of a run, read as {@link JsonlPromptSource}s, with each malformed line reported
 * as {@code file:line: problem} and nothing else: the JSON parser's own location text ({@code
 * [Source: REDACTED …; line: 1, column: 9]}) is left out, since the file and line already say
 * where. The source's own per-line warnings are off (logback.xml); these take their place.
 */
final class DatasetLines {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(DatasetLines.class);

    /** The parser's location: "(start marker at [Source: …])" or " at [Source: …]". */
    private static final Pattern PARSER_LOCATION =
            Pattern.compile("\\s*(\\(start marker at \\[Source: [^\\]]*\\]\\)|at \\[Source: [^\\]]*\\])");

    private DatasetLines() {}

    /** {@code problem} without the JSON parser's location text. */
    static String clean(String problem) {
        return problem == null ? null : PARSER_LOCATION.matcher(problem).replaceAll("");
    }

    /**
     * The prompts of {@code files}; each malformed line skipped is logged as a warning naming the
     * file, line and problem, then one line with how many were skipped.
     *
     * @throws InvalidConfigException as {@link JsonlPromptSource} does, its message cleaned
     */
    static JsonlPromptSource read(
            String key, List<Path> files, boolean cycle, Long shuffleSeed, OnMalformed onMalformed) {
        JsonlPromptSource source;
        try {
            source = new JsonlPromptSource(files, cycle, shuffleSeed, onMalformed);
        } catch (InvalidConfigException e) {
            InvalidConfigException cleaned = new InvalidConfigException(
                    e.key().equals("dataset") ? key : e.key(), clean(String.valueOf(e.value())), clean(e.allowed()));
            cleaned.initCause(e);
            throw cleaned;
        }
        for (String problem : source.problems()) {
            log.warn("skipping malformed line {}", clean(problem));
        }
        if (source.skipped() > 0) {
            log.warn(
                    "{} skipped {} malformed line(s) of {} (rollout.dataset.on_malformed = skip)",
                    key,
                    source.skipped(),
                    files);
        }
        return source;
    }
}
