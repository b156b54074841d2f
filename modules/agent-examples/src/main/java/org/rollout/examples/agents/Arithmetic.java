package org.rollout.examples.agents;

/**
 * The calculator tool: a recursive-descent evaluator for {@code + - * /}, unary minus, parentheses
 * and decimal numbers. Errors are {@link IllegalArgumentException}s naming the position. Each
 * evaluation uses its own parser instance, so concurrent calls are safe.
 */
final class Arithmetic {
    private final String s;
    private int at;

    private Arithmetic(String s) {
        this.s = s;
    }

    static double evaluate(String expression) {
        Arithmetic p = new Arithmetic(expression);
        double v = p.sum();
        p.skipSpace();
        if (p.at != expression.length()) {
            throw new IllegalArgumentException("unexpected '" + expression.charAt(p.at) + "' at " + p.at);
        }
        return v;
    }

    /** An integer without ".0", otherwise the double as Java prints it. */
    static String format(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }

    private double sum() {
        double v = product();
        while (true) {
            skipSpace();
            if (eat('+')) {
                v += product();
            } else if (eat('-')) {
                v -= product();
            } else {
                return v;
            }
        }
    }

    private double product() {
        double v = unary();
        while (true) {
            skipSpace();
            if (eat('*')) {
                v *= unary();
            } else if (eat('/')) {
                double d = unary();
                if (d == 0) {
                    throw new IllegalArgumentException("division by zero at " + at);
                }
                v /= d;
            } else {
                return v;
            }
        }
    }

    private double unary() {
        skipSpace();
        if (eat('-')) {
            return -unary();
        }
        if (eat('(')) {
            double v = sum();
            skipSpace();
            if (!eat(')')) {
                throw new IllegalArgumentException("missing ')' at " + at);
            }
            return v;
        }
        int start = at;
        while (at < s.length() && (Character.isDigit(s.charAt(at)) || s.charAt(at) == '.')) {
            at++;
        }
        if (start == at) {
            throw new IllegalArgumentException(
                    at < s.length() ? "unexpected '" + s.charAt(at) + "' at " + at : "expression ends early");
        }
        try {
            return Double.parseDouble(s.substring(start, at));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad number '" + s.substring(start, at) + "' at " + start);
        }
    }

    private boolean eat(char c) {
        if (at < s.length() && s.charAt(at) == c) {
            at++;
            return true;
        }
        return false;
    }

    private void skipSpace() {
        while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
            at++;
        }
    }
}
