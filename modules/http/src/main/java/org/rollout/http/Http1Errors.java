package org.rollout.http;

/**
 * The answers the server gives itself (400, 408, 413, 431, 500): a JSON response whose body is the
 * server's {@link Http1Server.ErrorBody}, and the string escaping of its default body.
 */
final class Http1Errors {
    private Http1Errors() {}

    static Http1Server.Response response(Http1Server.ErrorBody errors, int status, String message) {
        return Http1Server.Response.json(status, errors.of(status, message));
    }

    /** {@code s} as the contents of a JSON string. */
    static String escape(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 8);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.toString();
    }
}
