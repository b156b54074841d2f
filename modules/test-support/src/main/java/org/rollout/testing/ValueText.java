package org.rollout.testing;

import java.lang.reflect.Array;
import java.lang.reflect.RecordComponent;
import java.util.Collection;
import java.util.Map;

/**
 * Generated values as text for failure messages: strings as escaped Java literals (so control
 * characters and unpaired surrogates are visible), arrays, records, collections and maps element
 * by element, everything cut at a length limit so a huge value cannot flood the report.
 */
final class ValueText {
    private ValueText() {}

    /** Characters of a value shown in a failure message before it is cut. */
    static final int LIMIT = 500;

    static String of(Object value) {
        return of(value, LIMIT);
    }

    static String of(Object value, int limit) {
        StringBuilder out = new StringBuilder();
        append(out, value, limit);
        if (out.length() > limit) {
            out.setLength(limit);
            out.append("…(cut at ").append(limit).append(" chars)");
        }
        return out.toString();
    }

    private static void append(StringBuilder out, Object value, int limit) {
        if (out.length() > limit) {
            return;
        }
        if (value == null) {
            out.append("null");
        } else if (value instanceof CharSequence text) {
            appendQuoted(out, text, '"', limit);
        } else if (value instanceof Character c) {
            appendQuoted(out, String.valueOf(c), '\'', limit);
        } else if (value.getClass().isArray()) {
            out.append('[');
            int length = Array.getLength(value);
            for (int i = 0; i < length && out.length() <= limit; i++) {
                if (i > 0) {
                    out.append(", ");
                }
                append(out, Array.get(value, i), limit);
            }
            out.append(']');
        } else if (value instanceof Record record) {
            appendRecord(out, record, limit);
        } else if (value instanceof Collection<?> collection) {
            out.append('[');
            String separator = "";
            for (Object element : collection) {
                if (out.length() > limit) {
                    break;
                }
                out.append(separator);
                append(out, element, limit);
                separator = ", ";
            }
            out.append(']');
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            String separator = "";
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                if (out.length() > limit) {
                    break;
                }
                out.append(separator);
                append(out, entry.getKey(), limit);
                out.append('=');
                append(out, entry.getValue(), limit);
                separator = ", ";
            }
            out.append('}');
        } else {
            appendToString(out, value);
        }
    }

    private static void appendRecord(StringBuilder out, Record record, int limit) {
        out.append(record.getClass().getSimpleName()).append('[');
        String separator = "";
        for (RecordComponent component : record.getClass().getRecordComponents()) {
            if (out.length() > limit) {
                break;
            }
            out.append(separator).append(component.getName()).append('=');
            Object componentValue;
            try {
                // Test records are usually private nested types: their accessors need opening.
                var accessor = component.getAccessor();
                accessor.setAccessible(true);
                componentValue = accessor.invoke(record);
            } catch (ReflectiveOperationException | RuntimeException e) {
                out.append("<unreadable: ").append(e).append('>');
                separator = ", ";
                continue;
            }
            append(out, componentValue, limit);
            separator = ", ";
        }
        out.append(']');
    }

    private static void appendToString(StringBuilder out, Object value) {
        try {
            out.append(value);
        } catch (RuntimeException e) {
            // The value is what failed the property; a broken toString must not hide that failure.
            out.append('<')
                    .append(value.getClass().getName())
                    .append(" whose toString threw ")
                    .append(e)
                    .append('>');
        }
    }

    private static void appendQuoted(StringBuilder out, CharSequence text, char quote, int limit) {
        out.append(quote);
        for (int i = 0; i < text.length() && out.length() <= limit; i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\\' -> out.append("\\\\");
                default -> {
                    if (c == quote) {
                        out.append('\\').append(c);
                    } else if (c >= 0x20 && c < 0x7F) {
                        out.append(c);
                    } else {
                        out.append(String.format("\\u%04X", (int) c));
                    }
                }
            }
        }
        out.append(quote);
    }
}
