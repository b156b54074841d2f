package org.rollout.core;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

/**
 * What we read from a Jinja template's source before Jinjava parses it: the expressions inside
 * {@code {{ … }}} and {@code {% … %}} (strings, comments and {@code raw} blocks skipped), to fix
 * one precedence difference and to find the filters and tests a template uses.
 *
 * <p><b>{@code not} precedence.</b> In Jinja, {@code not} binds looser than comparisons: {@code not
 * x|length == 1} means {@code not (x|length == 1)}. Jinjava's expression language binds it tighter,
 * reading {@code (not x|length) == 1}, which silently inverts conditions real chat templates use
 * (Llama 3.1's single-tool-call check is written exactly so). {@link #withJinjaNotPrecedence} adds
 * the parentheses Jinja implies: a unary {@code not} whose operand holds a comparison ({@code ==
 * != < > <= >= in is}) at its own nesting level gets that operand wrapped, up to the next {@code
 * and}, {@code or}, {@code if}, {@code else}, comma or closing bracket. {@code is not} and {@code
 * not in} are operators, not unary {@code not}, and are left alone.
 *
 * <p><b>Filters and tests.</b> Jinjava renders an unknown filter or test as if it were absent,
 * where Jinja refuses the template; {@link #filterNames} and {@link #testNames} let the caller
 * refuse it too.
 */
final class JinjaSource {
    private static final Set<String> BOUNDARY_WORDS = Set.of("and", "or", "if", "else");
    private static final Set<String> COMPARISON_WORDS = Set.of("in", "is");
    private static final Set<String> COMPARISON_OPS = Set.of("==", "!=", "<", ">", "<=", ">=");

    private JinjaSource() {}

    /** {@code source} with parentheses added where Jinja's {@code not} precedence needs them. */
    static String withJinjaNotPrecedence(String source) {
        return mapExpressions(source, JinjaSource::wrapNotOperands);
    }

    /** The names after {@code |} in the template's expressions, in order of first use. */
    static Set<String> filterNames(String source) {
        Set<String> names = new LinkedHashSet<>();
        mapExpressions(source, body -> {
            List<Token> tokens = lex(body);
            for (int k = 0; k + 1 < tokens.size(); k++) {
                if (tokens.get(k).text.equals("|") && tokens.get(k + 1).word) {
                    names.add(tokens.get(k + 1).text);
                }
            }
            return body;
        });
        return names;
    }

    /** The names after {@code is} (or {@code is not}) in the template's expressions. */
    static Set<String> testNames(String source) {
        Set<String> names = new LinkedHashSet<>();
        mapExpressions(source, body -> {
            List<Token> tokens = lex(body);
            for (int k = 0; k + 1 < tokens.size(); k++) {
                if (tokens.get(k).isWord("is")) {
                    int n = tokens.get(k + 1).isWord("not") ? k + 2 : k + 1;
                    if (n < tokens.size() && tokens.get(n).word) {
                        names.add(tokens.get(n).text);
                    }
                }
            }
            return body;
        });
        return names;
    }

    /** Applies {@code f} to the expression inside every tag, leaving text, comments and raw blocks. */
    private static String mapExpressions(String source, UnaryOperator<String> f) {
        StringBuilder out = new StringBuilder(source.length() + 16);
        int i = 0;
        while (i < source.length()) {
            if (source.startsWith("{#", i)) {
                int end = source.indexOf("#}", i + 2);
                int stop = end < 0 ? source.length() : end + 2;
                out.append(source, i, stop);
                i = stop;
            } else if (source.startsWith("{{", i) || source.startsWith("{%", i)) {
                boolean statement = source.charAt(i + 1) == '%';
                int bodyStart = i + 2;
                int bodyEnd = endOfTag(source, bodyStart, statement);
                String body = source.substring(bodyStart, bodyEnd);
                // Whitespace control ("{%-", "-%}", "+%}") is not part of the expression.
                int lead = !body.isEmpty() && (body.charAt(0) == '-' || body.charAt(0) == '+') ? 1 : 0;
                int trail = body.length() > lead && (body.endsWith("-") || body.endsWith("+")) ? 1 : 0;
                out.append(source, i, bodyStart)
                        .append(body, 0, lead)
                        .append(f.apply(body.substring(lead, body.length() - trail)))
                        .append(body, body.length() - trail, body.length());
                int closeEnd = Math.min(source.length(), bodyEnd + 2);
                out.append(source, bodyEnd, closeEnd);
                i = closeEnd;
                if (statement && tagWord(body).equals("raw")) {
                    int endRaw = findEndRaw(source, i);
                    out.append(source, i, endRaw);
                    i = endRaw;
                }
            } else {
                out.append(source.charAt(i++));
            }
        }
        return out.toString();
    }

    private static String tagWord(String body) {
        return body.replace("-", "").replace("+", "").strip();
    }

    /** The index of the closing {@code }}} or {@code %}} (before it), honouring strings and brackets. */
    private static int endOfTag(String s, int from, boolean statement) {
        int depth = 0;
        int i = from;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '\'' || c == '"') {
                i = endOfString(s, i);
                continue;
            }
            if (statement ? s.startsWith("%}", i) : depth == 0 && s.startsWith("}}", i)) {
                return i;
            }
            if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
                depth--;
            }
            i++;
        }
        return s.length();
    }

    private static int findEndRaw(String s, int from) {
        int i = from;
        while ((i = s.indexOf("{%", i)) >= 0) {
            int end = s.indexOf("%}", i);
            if (end < 0) {
                return s.length();
            }
            if (tagWord(s.substring(i + 2, end)).equals("endraw")) {
                return i;
            }
            i = end;
        }
        return s.length();
    }

    private static int endOfString(String s, int quoteAt) {
        char q = s.charAt(quoteAt);
        int i = quoteAt + 1;
        while (i < s.length() && s.charAt(i) != q) {
            i += s.charAt(i) == '\\' ? 2 : 1;
        }
        return Math.min(s.length(), i + 1);
    }

    private record Token(String text, int start, int end, boolean word) {
        boolean isWord(String w) {
            return word && text.equals(w);
        }
    }

    private static String wrapNotOperands(String body) {
        List<Token> tokens = lex(body);
        // Insertions by position: '(' before a unary not's operand, ')' where the operand ends.
        TreeMap<Integer, StringBuilder> inserts = new TreeMap<>();
        for (int k = 0; k + 1 < tokens.size(); k++) {
            if (!tokens.get(k).isWord("not")
                    || (k > 0 && tokens.get(k - 1).isWord("is"))
                    || tokens.get(k + 1).isWord("in")) {
                continue;
            }
            int depth = 0;
            boolean comparison = false;
            int end = k + 1;
            for (; end < tokens.size(); end++) {
                Token u = tokens.get(end);
                String x = u.text;
                boolean closing = x.equals(")") || x.equals("]") || x.equals("}");
                if (depth == 0 && ((u.word && BOUNDARY_WORDS.contains(x)) || x.equals(",") || closing)) {
                    break;
                }
                if (x.equals("(") || x.equals("[") || x.equals("{")) {
                    depth++;
                } else if (closing) {
                    depth--;
                } else if (depth == 0 && (COMPARISON_OPS.contains(x) || (u.word && COMPARISON_WORDS.contains(x)))) {
                    comparison = true;
                }
            }
            if (comparison) {
                inserts.computeIfAbsent(tokens.get(k + 1).start, p -> new StringBuilder())
                        .append('(');
                inserts.computeIfAbsent(tokens.get(end - 1).end, p -> new StringBuilder())
                        .append(')');
            }
        }
        if (inserts.isEmpty()) {
            return body;
        }
        StringBuilder out = new StringBuilder(body);
        for (var e : inserts.descendingMap().entrySet()) {
            out.insert(e.getKey(), e.getValue());
        }
        return out.toString();
    }

    private static List<Token> lex(String s) {
        List<Token> tokens = new ArrayList<>();
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (Character.isWhitespace(c)) {
                i++;
            } else if (c == '\'' || c == '"') {
                int end = endOfString(s, i);
                tokens.add(new Token(s.substring(i, end), i, end, false));
                i = end;
            } else if (Character.isLetter(c) || c == '_') {
                int j = i + 1;
                while (j < s.length() && (Character.isLetterOrDigit(s.charAt(j)) || s.charAt(j) == '_')) {
                    j++;
                }
                tokens.add(new Token(s.substring(i, j), i, j, true));
                i = j;
            } else if (Character.isDigit(c)) {
                int j = i + 1;
                while (j < s.length() && (Character.isLetterOrDigit(s.charAt(j)) || s.charAt(j) == '.')) {
                    j++;
                }
                tokens.add(new Token(s.substring(i, j), i, j, false));
                i = j;
            } else {
                String two = i + 1 < s.length() ? s.substring(i, i + 2) : "";
                int len = COMPARISON_OPS.contains(two) || two.equals("//") || two.equals("**") ? 2 : 1;
                tokens.add(new Token(s.substring(i, i + len), i, i + len, false));
                i += len;
            }
        }
        return tokens;
    }
}
