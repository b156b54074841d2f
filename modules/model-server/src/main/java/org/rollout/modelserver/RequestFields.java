package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** Reads the control endpoints' fields, each refused with a 400 naming the field ({@link BadRequestException}). */
final class RequestFields {
    private RequestFields() {}

    /** A non-empty string field. */
    static String nonEmpty(ObjectNode body, String field) {
        JsonNode n = body.get(field);
        if (n == null || !n.isTextual() || n.asText().isEmpty()) {
            throw new BadRequestException(field, field + " must be a non-empty string");
        }
        return n.asText();
    }

    static int parseVersion(JsonNode v) {
        String text = v.isTextual() ? v.asText().trim() : v.isIntegralNumber() ? v.asText() : null;
        try {
            if (text != null) {
                int parsed = Integer.parseInt(text);
                if (parsed >= 0) {
                    return parsed;
                }
            }
        } catch (NumberFormatException e) {
            // reported below with the value
        }
        throw new BadRequestException(
                "weight_version", "weight_version must be a non-negative integer (string or number), got " + v);
    }

    /** An integer field given as a number or a numeric string (AReaL sends master_port as a string). */
    static int intField(ObjectNode body, String field, int min, int max) {
        JsonNode n = body.get(field);
        String text = n == null ? null : n.isTextual() ? n.asText().trim() : n.isIntegralNumber() ? n.asText() : null;
        try {
            if (text != null) {
                long v = Long.parseLong(text);
                if (v >= min && v <= max) {
                    return (int) v;
                }
            }
        } catch (NumberFormatException e) {
            // reported below with the value
        }
        throw new BadRequestException(
                field, field + " must be an integer in " + min + ".." + max + " (number or string), got " + n);
    }
}
