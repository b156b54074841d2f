package org.rollout.core;

/**
 * A trajectory dump line that does not match the format of semantics §7 (see {@code docs/dumps.md}). The
 * message reads {@code "<source>:<line>: field '<field>': <problem>"}, or without the field part
 * when the line as a whole is wrong (not JSON, not an object, not UTF-8, not terminated). It never
 * embeds the line itself.
 *
 * <p>The only exception {@link TrajectoryDumpReader} throws for content, whatever the input.
 */
public final class DumpFormatException extends RuntimeException {
    private final String source;
    private final int lineNumber;
    private final String field;
    private final String problem;

    /**
     * @param source where the line came from (a file path, or any label)
     * @param lineNumber 1-based
     * @param field the JSON path of the offending field ({@code version_rle[1][0]},
     *     {@code segments[2].len}), or {@code ""} for the line as a whole
     * @param problem what is wrong, in words
     */
    public DumpFormatException(String source, int lineNumber, String field, String problem) {
        this(source, lineNumber, field, problem, null);
    }

    public DumpFormatException(String source, int lineNumber, String field, String problem, Throwable cause) {
        super(render(source, lineNumber, field, problem), cause);
        this.source = source;
        this.lineNumber = lineNumber;
        this.field = field == null ? "" : field;
        this.problem = problem;
    }

    private static String render(String source, int lineNumber, String field, String problem) {
        String where = source + ":" + lineNumber + ": ";
        return field == null || field.isEmpty() ? where + problem : where + "field '" + field + "': " + problem;
    }

    /** Where the line came from. */
    public String source() {
        return source;
    }

    /** The 1-based line number. */
    public int lineNumber() {
        return lineNumber;
    }

    /** The JSON path of the offending field, or {@code ""} for the whole line. */
    public String field() {
        return field;
    }

    /** What is wrong, without the location. */
    public String problem() {
        return problem;
    }
}
