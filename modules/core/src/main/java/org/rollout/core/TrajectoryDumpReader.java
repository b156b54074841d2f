package org.rollout.core;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.json.JsonReadFeature;
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
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Reads trajectory dump files and checks that every line matches semantics §7 exactly (the format of
 * {@link DumpRecord}, {@code docs/dumps.md}). Used by end-to-end tests and tools; fuzzed.
 *
 * <p>A line is accepted only when all of these hold:
 *
 * <ol>
 *   <li>It is one JSON object (UTF-8, nothing after it, no duplicate keys). {@code NaN},
 *       {@code Infinity} and {@code -Infinity} are accepted as numbers, as Python writes them.
 *   <li>Its keys are {@code task_id, sample_idx, seqlen, prompt_len, head_version, tail_version,
 *       version_rle, reward, prompt, completion}, then optionally {@code segments}, then
 *       optionally {@code original_reward}: in exactly this order, no others.
 *   <li>Types: {@code task_id} an integer (64-bit); {@code sample_idx} an integer ≥ 0;
 *       {@code seqlen} an integer ≥ 1; {@code prompt_len} an integer in {@code [0, seqlen)}
 *       (the last valid token is generated, so at least one is); {@code head_version},
 *       {@code tail_version} 32-bit integers; {@code version_rle} a list of
 *       {@code [version, count]} pairs of 32-bit integers with {@code count ≥ 1};
 *       {@code reward} and {@code original_reward} numbers; {@code prompt} and
 *       {@code completion} strings; {@code segments} a list of objects with exactly the keys
 *       {@code role} ({@code "prompt"}, {@code "gen"} or {@code "context"}), {@code len} (an
 *       integer ≥ 1) and {@code text} (a string), in this order.
 *   <li>Segments, when present, are the row's maximal runs: their {@code len}s sum to
 *       {@code seqlen}; generated and non-generated runs alternate; there are at least two
 *       {@code gen} runs; the last run is {@code gen}; the first non-generated run is
 *       {@code prompt} and every later one {@code context} (so a row that starts generated has
 *       its {@code prompt} run after the first {@code gen}, as AReaL writes it); and
 *       {@code prompt_len} is the first run's length when that run is not generated, else 0.
 *   <li>The number of generated tokens {@code G} is knowable: the sum of the {@code gen}
 *       lengths with segments, else {@code seqlen − prompt_len} (a row without segments has one
 *       generated run, and it ends the row). The {@code version_rle} counts sum to {@code G}
 *       (so the list is never empty), adjacent runs have different versions, and
 *       {@code head_version} / {@code tail_version} are the least / greatest run version.
 * </ol>
 *
 * <p>Not checked, because it is not knowable from the line: that {@code prompt + completion}
 * equals the segment texts joined (decoding a split token sequence need not equal the split
 * decoding), and that the text lengths match token counts.
 *
 * <p>Errors: a line that breaks a rule throws {@link DumpFormatException} naming the source, the
 * line number and the field; for any input string {@link #readLine} throws nothing else. Files
 * are read whole; I/O failures are {@link IOException}s. Stateless and thread-safe.
 */
public final class TrajectoryDumpReader {

    static final List<String> REQUIRED_KEYS = List.of(
            "task_id",
            "sample_idx",
            "seqlen",
            "prompt_len",
            "head_version",
            "tail_version",
            "version_rle",
            "reward",
            "prompt",
            "completion");
    private static final Set<String> KNOWN_KEYS;
    private static final List<String> SEGMENT_KEYS = List.of("role", "len", "text");
    private static final int MAX_PROBLEM_CHARS = 200;

    static {
        List<String> all = new ArrayList<>(REQUIRED_KEYS);
        all.add("segments");
        all.add("original_reward");
        KNOWN_KEYS = Set.copyOf(all);
    }

    private static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .build();

    private TrajectoryDumpReader() {}

    /**
     * Every record of a dump file, in file order. An empty file has none; every line, the last
     * included, must end with {@code \n} (an unterminated last line is a torn write).
     *
     * @throws IOException when the file cannot be read
     * @throws DumpFormatException naming the file, line and field of the first bad line
     */
    public static List<DumpRecord> read(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        String source = file.toString();
        List<DumpRecord> records = new ArrayList<>();
        int start = 0;
        int lineNo = 0;
        while (start < bytes.length) {
            lineNo++;
            int end = start;
            while (end < bytes.length && bytes[end] != '\n') {
                end++;
            }
            if (end == bytes.length) {
                throw new DumpFormatException(
                        source, lineNo, "", "line is not terminated by a newline (a torn or truncated write)");
            }
            records.add(readLine(utf8(bytes, start, end, source, lineNo), source, lineNo));
            start = end + 1;
        }
        return records;
    }

    private static String utf8(byte[] bytes, int from, int to, String source, int lineNo) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes, from, to - from))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new DumpFormatException(source, lineNo, "", "line is not valid UTF-8", e);
        }
    }

    /**
     * The record of one line (without its newline).
     *
     * @param source where the line came from, for messages
     * @param lineNo its 1-based line number, for messages
     * @throws DumpFormatException when the line breaks any rule of this class; never anything else
     */
    public static DumpRecord readLine(String line, String source, int lineNo) {
        Line l = new Line(String.valueOf(source), lineNo);
        if (line == null) {
            throw l.error("", "line is null");
        }
        try {
            return l.parse(line);
        } catch (DumpFormatException e) {
            throw e;
        } catch (RuntimeException e) {
            // A safety net for the fuzzer's sake: every rule above is checked explicitly, so this
            // means a rule is missing; the cause keeps the evidence.
            throw l.error("", "unreadable line: " + e, e);
        }
    }

    /** The checks of one line, carrying its location for messages. */
    private record Line(String source, int lineNo) {

        DumpFormatException error(String field, String problem) {
            return error(field, problem, null);
        }

        DumpFormatException error(String field, String problem, Throwable cause) {
            return new DumpFormatException(source, lineNo, clip(field), clip(problem), cause);
        }

        DumpRecord parse(String line) {
            JsonNode root;
            try {
                root = MAPPER.readTree(line);
            } catch (JsonProcessingException e) {
                throw error("", "not valid JSON: " + e.getOriginalMessage(), e);
            }
            if (root == null || !root.isObject()) {
                throw error("", "not a JSON object");
            }
            checkKeyOrder(root);

            long taskId = integerField(root, "task_id", Long.MIN_VALUE, Long.MAX_VALUE);
            int sampleIdx = (int) integerField(root, "sample_idx", 0, Integer.MAX_VALUE);
            int seqlen = (int) integerField(root, "seqlen", 1, Integer.MAX_VALUE);
            int promptLen = (int) integerField(root, "prompt_len", 0, Integer.MAX_VALUE);
            int head = (int) integerField(root, "head_version", Integer.MIN_VALUE, Integer.MAX_VALUE);
            int tail = (int) integerField(root, "tail_version", Integer.MIN_VALUE, Integer.MAX_VALUE);
            List<VersionRle.Run> rle = versionRle(root.get("version_rle"));
            double reward = number(root, "reward");
            String prompt = text(root, "prompt");
            String completion = text(root, "completion");
            List<DumpRecord.Segment> segments = root.has("segments") ? segments(root.get("segments")) : List.of();
            Double originalReward = root.has("original_reward") ? number(root, "original_reward") : null;

            if (promptLen >= seqlen) {
                throw error(
                        "prompt_len",
                        "must be below seqlen " + seqlen + " (the last valid token is generated), got " + promptLen);
            }
            long generated = root.has("segments") ? checkSegments(segments, seqlen, promptLen) : seqlen - promptLen;
            checkVersions(rle, generated, head, tail);
            return new DumpRecord(
                    taskId,
                    sampleIdx,
                    seqlen,
                    promptLen,
                    head,
                    tail,
                    rle,
                    reward,
                    prompt,
                    completion,
                    segments,
                    originalReward);
        }

        private void checkKeyOrder(JsonNode root) {
            List<String> names = new ArrayList<>();
            root.fieldNames().forEachRemaining(names::add);
            List<String> expected = new ArrayList<>(REQUIRED_KEYS);
            if (root.has("segments")) {
                expected.add("segments");
            }
            if (root.has("original_reward")) {
                expected.add("original_reward");
            }
            for (int k = 0; k < Math.max(names.size(), expected.size()); k++) {
                String got = k < names.size() ? names.get(k) : null;
                String want = k < expected.size() ? expected.get(k) : null;
                if (got != null && got.equals(want)) {
                    continue;
                }
                if (got != null && !KNOWN_KEYS.contains(got)) {
                    throw error(got, "unexpected key");
                }
                if (want != null && !root.has(want)) {
                    throw error(want, "missing key");
                }
                throw error(got, "key out of order: expected '" + want + "' at position " + k);
            }
        }

        /** Keys and messages can quote input; never let them carry a whole payload. */
        private static String clip(String s) {
            return s.length() > MAX_PROBLEM_CHARS ? s.substring(0, MAX_PROBLEM_CHARS) + "…" : s;
        }

        private long integerField(JsonNode parent, String field, long min, long max) {
            return integer(parent.get(field), field, min, max);
        }

        private long integer(JsonNode n, String field, long min, long max) {
            if (n == null || !n.isIntegralNumber()) {
                throw error(field, "must be an integer, got " + describe(n));
            }
            if (!n.canConvertToLong() || n.longValue() < min || n.longValue() > max) {
                throw error(field, "must be in [" + min + ", " + max + "], got " + n.asText());
            }
            return n.longValue();
        }

        private double number(JsonNode parent, String field) {
            JsonNode n = parent.get(field);
            if (n == null || !n.isNumber()) {
                throw error(field, "must be a number, got " + describe(n));
            }
            return n.doubleValue();
        }

        private String text(JsonNode parent, String field) {
            JsonNode n = parent.get(field);
            if (n == null || !n.isTextual()) {
                throw error(field, "must be a string, got " + describe(n));
            }
            return n.textValue();
        }

        private List<VersionRle.Run> versionRle(JsonNode n) {
            if (n == null || !n.isArray()) {
                throw error("version_rle", "must be a list of [version, count] pairs, got " + describe(n));
            }
            List<VersionRle.Run> runs = new ArrayList<>(n.size());
            for (int k = 0; k < n.size(); k++) {
                JsonNode pair = n.get(k);
                String field = "version_rle[" + k + "]";
                if (!pair.isArray() || pair.size() != 2) {
                    throw error(field, "must be a [version, count] pair, got " + describe(pair));
                }
                int version = (int) integer(pair.get(0), field + "[0]", Integer.MIN_VALUE, Integer.MAX_VALUE);
                int count = (int) integer(pair.get(1), field + "[1]", 1, Integer.MAX_VALUE);
                runs.add(new VersionRle.Run(version, count));
            }
            return runs;
        }

        private List<DumpRecord.Segment> segments(JsonNode n) {
            if (n == null || !n.isArray()) {
                throw error("segments", "must be a list of segments, got " + describe(n));
            }
            List<DumpRecord.Segment> out = new ArrayList<>(n.size());
            for (int k = 0; k < n.size(); k++) {
                JsonNode s = n.get(k);
                String field = "segments[" + k + "]";
                if (!s.isObject()) {
                    throw error(field, "must be an object with role, len and text, got " + describe(s));
                }
                List<String> keys = new ArrayList<>();
                Iterator<String> it = s.fieldNames();
                it.forEachRemaining(keys::add);
                if (!keys.equals(SEGMENT_KEYS)) {
                    throw error(field, "must have exactly the keys " + SEGMENT_KEYS + " in this order, got " + keys);
                }
                JsonNode roleNode = s.get("role");
                DumpRecord.Role role = roleNode.isTextual() ? DumpRecord.Role.fromWireName(roleNode.textValue()) : null;
                if (role == null) {
                    throw error(
                            field + ".role", "must be \"prompt\", \"gen\" or \"context\", got " + describe(roleNode));
                }
                int len = (int) integer(s.get("len"), field + ".len", 1, Integer.MAX_VALUE);
                JsonNode textNode = s.get("text");
                if (!textNode.isTextual()) {
                    throw error(field + ".text", "must be a string, got " + describe(textNode));
                }
                out.add(new DumpRecord.Segment(role, len, textNode.textValue()));
            }
            return out;
        }

        /** Checks the segment rules and returns the number of generated tokens. */
        private long checkSegments(List<DumpRecord.Segment> segments, int seqlen, int promptLen) {
            long total = 0;
            long generated = 0;
            int genRuns = 0;
            boolean seenNonGen = false;
            for (int k = 0; k < segments.size(); k++) {
                DumpRecord.Segment s = segments.get(k);
                boolean gen = s.role() == DumpRecord.Role.GEN;
                if (k > 0 && gen == (segments.get(k - 1).role() == DumpRecord.Role.GEN)) {
                    throw error(
                            "segments[" + k + "].role",
                            "runs must alternate between gen and non-gen, but segments " + (k - 1) + " and " + k
                                    + " are both " + (gen ? "gen" : "non-gen"));
                }
                if (!gen) {
                    DumpRecord.Role want = seenNonGen ? DumpRecord.Role.CONTEXT : DumpRecord.Role.PROMPT;
                    if (s.role() != want) {
                        throw error(
                                "segments[" + k + "].role",
                                "the " + (seenNonGen ? "later" : "first") + " non-generated run must be \"" + want
                                        + "\", got \"" + s.role() + "\"");
                    }
                    seenNonGen = true;
                } else {
                    genRuns++;
                    generated += s.len();
                }
                total += s.len();
            }
            if (genRuns < 2) {
                throw error("segments", "are written only for two or more gen runs, got " + genRuns);
            }
            if (segments.get(segments.size() - 1).role() != DumpRecord.Role.GEN) {
                throw error("segments[" + (segments.size() - 1) + "].role", "the last run must be \"gen\"");
            }
            if (total != seqlen) {
                throw error("segments", "lengths sum to " + total + ", but seqlen is " + seqlen);
            }
            DumpRecord.Segment first = segments.get(0);
            int firstGen = first.role() == DumpRecord.Role.GEN ? 0 : first.len();
            if (promptLen != firstGen) {
                throw error(
                        "prompt_len", "must be " + firstGen + ", where the first gen segment starts, got " + promptLen);
            }
            return generated;
        }

        private void checkVersions(List<VersionRle.Run> rle, long generated, int head, int tail) {
            long counted = VersionRle.totalCount(rle);
            if (counted != generated) {
                throw error(
                        "version_rle",
                        "counts sum to " + counted + ", but the row has " + generated + " generated tokens");
            }
            for (int k = 1; k < rle.size(); k++) {
                if (rle.get(k).version() == rle.get(k - 1).version()) {
                    throw error(
                            "version_rle[" + k + "]",
                            "repeats version " + rle.get(k).version() + " of the run before it; runs must be maximal");
                }
            }
            int min = Integer.MAX_VALUE;
            int max = Integer.MIN_VALUE;
            for (VersionRle.Run r : rle) {
                min = Math.min(min, r.version());
                max = Math.max(max, r.version());
            }
            if (head != min) {
                throw error("head_version", "must be the least version in version_rle, " + min + ", got " + head);
            }
            if (tail != max) {
                throw error("tail_version", "must be the greatest version in version_rle, " + max + ", got " + tail);
            }
        }

        private static String describe(JsonNode n) {
            if (n == null || n.isMissingNode()) {
                return "nothing";
            }
            return switch (n.getNodeType()) {
                case ARRAY -> "a list of " + n.size();
                case OBJECT -> "an object";
                case STRING -> "a string";
                case BOOLEAN -> n.asText();
                case NULL -> "null";
                case NUMBER -> n.isIntegralNumber() ? "the integer " + n.asText() : "the number " + n.asText();
                default -> n.getNodeType().toString().toLowerCase(Locale.ROOT);
            };
        }
    }
}
