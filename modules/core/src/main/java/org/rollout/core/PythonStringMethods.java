package org.rollout.core;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * The Python {@code str} methods Hugging Face chat templates call, for Jinjava, which otherwise
 * only offers Java's {@code String} methods: {@code strip}, {@code lstrip}, {@code rstrip} (with
 * or without a set of characters), {@code startswith}, {@code endswith} (a prefix or a list of
 * them), {@code split} (on whitespace runs or a separator, with an optional maxsplit), {@code
 * upper}, {@code lower}, {@code title}, {@code capitalize}, {@code replace}, {@code find}, {@code
 * count} and {@code join}.
 *
 * <p>Only calls on a string base with one of these names and a matching number of arguments are
 * resolved here; everything else falls through to Jinjava's resolvers. Stateless and
 * thread-safe.
 */
final class PythonStringMethods extends ELResolver {

    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
        if (!(base instanceof String s) || method == null) {
            return null;
        }
        Object[] args = params == null ? new Object[0] : params;
        Object result = call(s, method.toString(), args);
        if (result != UNRESOLVED) {
            context.setPropertyResolved(true);
            return result;
        }
        return null;
    }

    private static final Object UNRESOLVED = new Object();

    static Object call(String s, String name, Object[] args) {
        int n = args.length;
        return switch (name) {
            case "strip" -> n <= 1 ? strip(s, chars(args), true, true) : UNRESOLVED;
            case "lstrip" -> n <= 1 ? strip(s, chars(args), true, false) : UNRESOLVED;
            case "rstrip" -> n <= 1 ? strip(s, chars(args), false, true) : UNRESOLVED;
            case "startswith" -> n == 1 ? affix(s, args[0], true) : UNRESOLVED;
            case "endswith" -> n == 1 ? affix(s, args[0], false) : UNRESOLVED;
            case "split" -> n <= 2 ? split(s, n >= 1 ? args[0] : null, n == 2 ? toInt(args[1]) : -1) : UNRESOLVED;
            case "upper" -> n == 0 ? s.toUpperCase(Locale.ROOT) : UNRESOLVED;
            case "lower" -> n == 0 ? s.toLowerCase(Locale.ROOT) : UNRESOLVED;
            case "title" -> n == 0 ? title(s) : UNRESOLVED;
            case "capitalize" -> n == 0 ? capitalize(s) : UNRESOLVED;
            case "replace" ->
                n == 2 || n == 3 ? replace(s, str(args[0]), str(args[1]), n == 3 ? toInt(args[2]) : -1) : UNRESOLVED;
            case "find" -> n == 1 ? (long) s.indexOf(str(args[0])) : UNRESOLVED;
            case "count" -> n == 1 ? count(s, str(args[0])) : UNRESOLVED;
            case "join" -> n == 1 ? join(s, args[0]) : UNRESOLVED;
            default -> UNRESOLVED;
        };
    }

    private static String chars(Object[] args) {
        return args.length == 0 || args[0] == null ? null : str(args[0]);
    }

    private static String str(Object o) {
        return o == null ? "None" : o.toString();
    }

    private static int toInt(Object o) {
        if (o instanceof Number num) {
            return num.intValue();
        }
        throw new IllegalArgumentException("expected an integer argument, got " + o);
    }

    /** Python's whitespace: Java's plus the no-break spaces Java leaves out. */
    private static boolean isSpace(char c) {
        return Character.isWhitespace(c) || Character.isSpaceChar(c);
    }

    private static String strip(String s, String chars, boolean left, boolean right) {
        int from = 0;
        int to = s.length();
        while (left && from < to && stripped(s.charAt(from), chars)) {
            from++;
        }
        while (right && to > from && stripped(s.charAt(to - 1), chars)) {
            to--;
        }
        return s.substring(from, to);
    }

    private static boolean stripped(char c, String chars) {
        return chars == null ? isSpace(c) : chars.indexOf(c) >= 0;
    }

    private static boolean affix(String s, Object affixes, boolean prefix) {
        if (affixes instanceof Collection<?> options) {
            for (Object o : options) {
                if (affix(s, o, prefix)) {
                    return true;
                }
            }
            return false;
        }
        String a = str(affixes);
        return prefix ? s.startsWith(a) : s.endsWith(a);
    }

    private static List<String> split(String s, Object sep, int maxSplit) {
        List<String> out = new ArrayList<>();
        if (sep == null) {
            // Runs of whitespace separate; leading and trailing whitespace yields no empty parts.
            int i = 0;
            while (i < s.length()) {
                while (i < s.length() && isSpace(s.charAt(i))) {
                    i++;
                }
                if (i == s.length()) {
                    break;
                }
                if (maxSplit >= 0 && out.size() == maxSplit) {
                    out.add(s.substring(i)); // Python keeps the remainder's trailing whitespace
                    return out;
                }
                int j = i;
                while (j < s.length() && !isSpace(s.charAt(j))) {
                    j++;
                }
                out.add(s.substring(i, j));
                i = j;
            }
            return out;
        }
        String separator = str(sep);
        if (separator.isEmpty()) {
            throw new IllegalArgumentException("split: empty separator");
        }
        int start = 0;
        int at;
        while ((maxSplit < 0 || out.size() < maxSplit) && (at = s.indexOf(separator, start)) >= 0) {
            out.add(s.substring(start, at));
            start = at + separator.length();
        }
        out.add(s.substring(start));
        return out;
    }

    private static String title(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        boolean previousCased = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            sb.append(previousCased ? Character.toLowerCase(c) : Character.toTitleCase(c));
            previousCased = Character.isLetter(c);
        }
        return sb.toString();
    }

    private static String capitalize(String s) {
        if (s.isEmpty()) {
            return s;
        }
        return Character.toUpperCase(s.charAt(0)) + s.substring(1).toLowerCase(Locale.ROOT);
    }

    private static String replace(String s, String old, String replacement, int count) {
        if (count < 0) {
            return s.replace(old, replacement);
        }
        StringBuilder sb = new StringBuilder();
        int start = 0;
        int done = 0;
        int at;
        while (done < count && !old.isEmpty() && (at = s.indexOf(old, start)) >= 0) {
            sb.append(s, start, at).append(replacement);
            start = at + old.length();
            done++;
        }
        return sb.append(s.substring(start)).toString();
    }

    private static long count(String s, String sub) {
        if (sub.isEmpty()) {
            return s.length() + 1L;
        }
        long n = 0;
        int at = 0;
        while ((at = s.indexOf(sub, at)) >= 0) {
            n++;
            at += sub.length();
        }
        return n;
    }

    private static String join(String s, Object parts) {
        if (!(parts instanceof Iterable<?> it)) {
            throw new IllegalArgumentException("join: expected a list, got " + parts);
        }
        StringBuilder sb = new StringBuilder();
        boolean first = true;
        for (Object p : it) {
            if (!first) {
                sb.append(s);
            }
            sb.append(str(p));
            first = false;
        }
        return sb.toString();
    }

    // Resolution of properties is left to the other resolvers.

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return false;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {
        // Not resolved here: setPropertyResolved stays false, so the next resolver handles it.
    }
}
