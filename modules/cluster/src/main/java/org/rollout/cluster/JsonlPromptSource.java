package org.rollout.cluster;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.regex.Pattern;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.OnMalformed;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prompts from JSON Lines dataset files: one JSON object per line, read in file order (or
 * shuffled per epoch with a seed), cycling over epochs unless told not to.
 *
 * <p>Lines end with {@code \n} (a {@code \r} before it is dropped; the last line needs none);
 * blank lines are ignored and a UTF-8 byte-order mark at the start of a file is skipped. A
 * malformed line — not UTF-8, not JSON, JSON that is not an object, an object with a duplicate
 * key, or anything after the object — is reported as {@code file:line: problem}, then skipped
 * ({@code rollout.dataset.on_malformed = "skip"}, the default: logged as a warning, counted in
 * {@link #skipped()}, and summed up per file) or fatal ({@code "fail"}: an {@link
 * InvalidConfigException} naming the file and line). The files are read once, at construction, so
 * a bad dataset fails at start-up and not hours into a run; datasets must fit in memory. Fuzzed
 * (JsonlPromptSourceTest).
 */
public final class JsonlPromptSource implements PromptSource {
    private static final Logger log = LoggerFactory.getLogger(JsonlPromptSource.class);
    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();
    private static final TypeReference<Map<String, Object>> OBJECT = new TypeReference<>() {};

    /** Skipped lines logged one by one and kept in {@link #problems()}, at most; the rest are counted. */
    static final int MAX_REPORTED = 100;

    /** The longest problem text quoted from the JSON parser. */
    private static final int MAX_PROBLEM_CHARS = 200;

    private final List<Map<String, Object>> items;
    private final List<String> problems;
    private final int skipped;
    private final boolean cycle;
    private final Long shuffleSeed;
    private long epoch = -1;
    private List<Map<String, Object>> order;

    /**
     * @param files the dataset files, read in order
     * @param cycle start over after the last item (training) or stop (evaluation)
     * @param shuffleSeed shuffle each epoch with this seed, or null to keep file order
     * @param onMalformed skip (and report) or fail on a malformed line
     * @throws InvalidConfigException when a file cannot be read, the files hold no item, or (with
     *     FAIL) a line is malformed; the message names the file and line
     */
    public JsonlPromptSource(List<Path> files, boolean cycle, Long shuffleSeed, OnMalformed onMalformed) {
        List<Map<String, Object>> read = new ArrayList<>();
        Skips skips = new Skips();
        for (Path file : files) {
            readFile(file, onMalformed, read, skips);
        }
        if (read.isEmpty()) {
            throw new InvalidConfigException(
                    "dataset",
                    files.toString(),
                    "files with at least one JSON object line"
                            + (skips.count == 0
                                    ? ""
                                    : "; " + skips.count + " malformed line(s) skipped, the first "
                                            + skips.kept.get(0)));
        }
        this.items = List.copyOf(read);
        this.problems = List.copyOf(skips.kept);
        this.skipped = skips.count;
        this.cycle = cycle;
        this.shuffleSeed = shuffleSeed;
    }

    /** Malformed lines skipped so far: all counted, the first {@link #MAX_REPORTED} kept. */
    private static final class Skips {
        int count;
        final List<String> kept = new ArrayList<>();
    }

    private static void readFile(Path file, OnMalformed onMalformed, List<Map<String, Object>> out, Skips skips) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new InvalidConfigException("dataset", file.toString(), "a readable JSONL file (" + e + ")");
        }
        int skippedBefore = skips.count;
        int start = startOfContent(bytes);
        int lineNo = 0;
        while (start < bytes.length) {
            lineNo++;
            int end = start;
            while (end < bytes.length && bytes[end] != '\n') {
                end++;
            }
            int next = end + 1;
            if (end > start && bytes[end - 1] == '\r') {
                end--;
            }
            String problem = parseLine(bytes, start, end, out);
            start = next;
            if (problem == null) {
                continue;
            }
            String where = file + ":" + lineNo + ": " + problem;
            if (onMalformed == OnMalformed.FAIL) {
                throw new InvalidConfigException("dataset", where, "one JSON object per line (on_malformed = fail)");
            }
            skips.count++;
            if (skips.kept.size() < MAX_REPORTED) {
                skips.kept.add(where);
                log.warn("skipping malformed dataset line {}", where);
            }
        }
        int skippedHere = skips.count - skippedBefore;
        if (skippedHere > 0) {
            log.warn(
                    "skipped {} malformed line(s) of {} lines in {} (rollout.dataset.on_malformed = skip)",
                    skippedHere,
                    lineNo,
                    file);
        }
    }

    /** After a UTF-8 byte-order mark, if the file starts with one. */
    private static int startOfContent(byte[] b) {
        return b.length >= 3 && (b[0] & 0xFF) == 0xEF && (b[1] & 0xFF) == 0xBB && (b[2] & 0xFF) == 0xBF ? 3 : 0;
    }

    /**
     * Adds the item of {@code bytes[from, to)} to {@code out}, or returns what is wrong with it;
     * null also for a blank line, which is not an item.
     */
    private static String parseLine(byte[] bytes, int from, int to, List<Map<String, Object>> out) {
        String line;
        try {
            line = StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes, from, to - from))
                    .toString();
        } catch (CharacterCodingException e) {
            return "not valid UTF-8";
        }
        if (line.isBlank()) {
            return null;
        }
        JsonNode parsed;
        try {
            parsed = JSON.readTree(line);
        } catch (JsonProcessingException e) {
            // The parser's own location text ("[Source: REDACTED …; line: 1, column: 9]") is left
            // out: the file and line say where.
            return clip("not valid JSON: "
                    + PARSER_LOCATION.matcher(e.getOriginalMessage()).replaceAll(""));
        }
        if (!parsed.isObject()) {
            return "not a JSON object (got " + describe(parsed) + ")";
        }
        out.add(Collections.unmodifiableMap(JSON.convertValue(parsed, OBJECT)));
        return null;
    }

    private static String clip(String s) {
        return s.length() <= MAX_PROBLEM_CHARS ? s : s.substring(0, MAX_PROBLEM_CHARS) + "…";
    }

    /** The JSON parser's location inside a message: "(start marker at [Source: …])" or " at [Source: …]". */
    private static final Pattern PARSER_LOCATION =
            Pattern.compile("\\s*(\\(start marker at \\[Source: [^\\]]*\\]\\)|at \\[Source: [^\\]]*\\])");

    private static String describe(JsonNode parsed) {
        return switch (parsed.getNodeType()) {
            case ARRAY -> "an array";
            case STRING -> "a string";
            case NUMBER -> "a number";
            case BOOLEAN -> "a boolean";
            case NULL -> "null";
            default -> parsed.getNodeType().toString().toLowerCase(Locale.ROOT);
        };
    }

    /** The items read. */
    public int size() {
        return items.size();
    }

    /** The first {@value #MAX_REPORTED} malformed lines skipped, each as {@code file:line: problem}. */
    public List<String> problems() {
        return problems;
    }

    /** How many malformed lines were skipped, over all files. */
    public int skipped() {
        return skipped;
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
