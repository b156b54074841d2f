package org.rollout.cluster;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import org.rollout.api.InvalidConfigException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prompts from JSON Lines dataset files: one JSON object per line, read in file order (or
 * shuffled per epoch with a seed), cycling over epochs unless told not to.
 *
 * <p>A malformed line — not JSON, or JSON that is not an object — is reported with its file and
 * line number, then skipped ({@code on_malformed = skip}, the default) or fatal ({@code fail}).
 * Blank lines are ignored. The files are read once, at construction, so a bad dataset fails at
 * start-up and not hours into a run; datasets must fit in memory.
 */
public final class JsonlPromptSource implements PromptSource {
    private static final Logger log = LoggerFactory.getLogger(JsonlPromptSource.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<Map<String, Object>> OBJECT = new TypeReference<>() {};

    /** What to do with a malformed line. */
    public enum OnMalformed {
        SKIP,
        FAIL
    }

    private final List<Map<String, Object>> items;
    private final List<String> problems;
    private final boolean cycle;
    private final Long shuffleSeed;
    private long epoch = -1;
    private List<Map<String, Object>> order;

    /**
     * @param files the dataset files, read in order
     * @param cycle start over after the last item (training) or stop (evaluation)
     * @param shuffleSeed shuffle each epoch with this seed, or null to keep file order
     * @param onMalformed skip (and report) or fail on a malformed line
     * @throws InvalidConfigException when a file cannot be read, has no item, or (with FAIL) has a
     *     malformed line; the message names the file and line
     */
    public JsonlPromptSource(List<Path> files, boolean cycle, Long shuffleSeed, OnMalformed onMalformed) {
        List<Map<String, Object>> read = new ArrayList<>();
        List<String> bad = new ArrayList<>();
        for (Path file : files) {
            readFile(file, onMalformed, read, bad);
        }
        if (read.isEmpty()) {
            throw new InvalidConfigException("dataset", files.toString(), "files with at least one JSON object line");
        }
        this.items = List.copyOf(read);
        this.problems = List.copyOf(bad);
        this.cycle = cycle;
        this.shuffleSeed = shuffleSeed;
    }

    private static void readFile(Path file, OnMalformed onMalformed, List<Map<String, Object>> out, List<String> bad) {
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            int lineNo = 0;
            while ((line = r.readLine()) != null) {
                lineNo++;
                if (line.isBlank()) {
                    continue;
                }
                String problem;
                try {
                    Object parsed = JSON.readValue(line, Object.class);
                    if (parsed instanceof Map<?, ?>) {
                        out.add(Collections.unmodifiableMap(JSON.readValue(line, OBJECT)));
                        continue;
                    }
                    problem = "not a JSON object (got " + (parsed == null ? "null" : describe(parsed)) + ")";
                } catch (JsonProcessingException e) {
                    problem = "not valid JSON: " + e.getOriginalMessage();
                }
                String where = file + ":" + lineNo + ": " + problem;
                if (onMalformed == OnMalformed.FAIL) {
                    throw new InvalidConfigException(
                            "dataset", where, "one JSON object per line (on_malformed = fail)");
                }
                log.warn("skipping malformed dataset line {}", where);
                bad.add(where);
            }
        } catch (IOException e) {
            throw new InvalidConfigException("dataset", file.toString(), "a readable JSONL file (" + e + ")");
        }
    }

    private static String describe(Object parsed) {
        return parsed instanceof List<?>
                ? "an array"
                : parsed.getClass().getSimpleName().toLowerCase();
    }

    /** The items read. */
    public int size() {
        return items.size();
    }

    /** Each malformed line skipped, as {@code file:line: problem}. */
    public List<String> problems() {
        return problems;
    }

    @Override
    public Optional<Map<String, Object>> item(long index) {
        long e = index / items.size();
        if (index < 0 || (!cycle && e > 0)) {
            return Optional.empty();
        }
        return Optional.of(orderOf(e).get((int) (index % items.size())));
    }

    /** Epoch {@code e}'s order: file order, or a shuffle seeded by the seed and the epoch. */
    private List<Map<String, Object>> orderOf(long e) {
        if (shuffleSeed == null) {
            return items;
        }
        if (e != epoch) {
            List<Map<String, Object>> o = new ArrayList<>(items);
            Collections.shuffle(o, new Random(shuffleSeed * 1_000_003L + e));
            order = o;
            epoch = e;
        }
        return order;
    }
}
