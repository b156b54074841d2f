package org.rollout.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.ToIntFunction;
import java.util.stream.Stream;

/** The string generators of {@link Gen}: code point draws and strings built from them. */
final class CodePoints {
    private CodePoints() {}

    /**
     * Misses allowed before {@link #printable} settles for a fixed printable character. Planes 0–2
     * are mostly assigned, so a miss run this long does not happen in practice; the bound only
     * guarantees termination on a JDK with a very different Unicode table.
     */
    private static final int PRINTABLE_ATTEMPTS = 1_000;

    /** Strings of {@code [minLength, maxLength]} code points drawn by {@code codePoint}; shrinks by shortening. */
    static Gen<String> strings(ToIntFunction<SplittableRandom> codePoint, int minLength, int maxLength) {
        Sizes.check(minLength, maxLength);
        return new Gen<>() {
            @Override
            public String generate(SplittableRandom random) {
                int length = Sizes.draw(random, minLength, maxLength);
                StringBuilder out = new StringBuilder(length);
                for (int i = 0; i < length; i++) {
                    out.appendCodePoint(codePoint.applyAsInt(random));
                }
                return out.toString();
            }

            @Override
            public Stream<String> shrink(String value) {
                List<Integer> codePoints = value.codePoints().boxed().toList();
                // Shorter only: a constant generator offers no simpler single code point.
                return Shrinks.list(codePoints, minLength, Gen.constant(0)).map(CodePoints::ofCodePoints);
            }
        };
    }

    /** Strings of {@code [minLength, maxLength]} chars of any kind, unpaired surrogates included. */
    static Gen<String> anyChars(int minLength, int maxLength) {
        Sizes.check(minLength, maxLength);
        return new Gen<>() {
            @Override
            public String generate(SplittableRandom random) {
                int length = Sizes.draw(random, minLength, maxLength);
                StringBuilder out = new StringBuilder(length);
                while (out.length() < length) {
                    switch (random.nextInt(4)) {
                        case 0 -> out.append((char) random.nextInt(0x80));
                        case 1 -> out.append((char) random.nextInt(0x10000));
                        case 2 ->
                            out.append((char) random.nextInt(Character.MIN_SURROGATE, Character.MAX_SURROGATE + 1));
                        default -> {
                            if (out.length() + 2 <= length) {
                                out.appendCodePoint(random.nextInt(
                                        Character.MIN_SUPPLEMENTARY_CODE_POINT, Character.MAX_CODE_POINT + 1));
                            } else {
                                out.append((char) random.nextInt(Character.MIN_SURROGATE, Character.MAX_SURROGATE + 1));
                            }
                        }
                    }
                }
                return out.toString();
            }

            @Override
            public Stream<String> shrink(String value) {
                List<Character> chars = new ArrayList<>(value.length());
                for (int i = 0; i < value.length(); i++) {
                    chars.add(value.charAt(i));
                }
                // Shorter only: a constant generator offers no simpler single char.
                return Shrinks.list(chars, minLength, Gen.constant('a')).map(list -> {
                    StringBuilder out = new StringBuilder(list.size());
                    list.forEach(out::append);
                    return out.toString();
                });
            }
        };
    }

    /** Any Unicode scalar value; its UTF-8 length (1–4 bytes) is chosen evenly first. */
    static int scalarValue(SplittableRandom random) {
        return switch (random.nextInt(4)) {
            case 0 -> random.nextInt(0x80);
            case 1 -> random.nextInt(0x80, 0x800);
            case 2 -> {
                // 0x800..0xFFFF without the 2048 surrogates: draw from the smaller range, then skip them.
                int codePoint = random.nextInt(0x800, 0x10000 - 0x800);
                yield codePoint < Character.MIN_SURROGATE ? codePoint : codePoint + 0x800;
            }
            default -> random.nextInt(Character.MIN_SUPPLEMENTARY_CODE_POINT, Character.MAX_CODE_POINT + 1);
        };
    }

    /** A printable code point from ASCII, the rest of the BMP, or planes 1–2, each a third of the time. */
    static int printable(SplittableRandom random) {
        int plane = random.nextInt(3);
        if (plane == 0) {
            return random.nextInt(0x20, 0x7F);
        }
        for (int attempt = 0; attempt < PRINTABLE_ATTEMPTS; attempt++) {
            int codePoint = plane == 1 ? random.nextInt(0xA0, 0x10000) : random.nextInt(0x10000, 0x30000);
            if (isPrintable(codePoint)) {
                return codePoint;
            }
        }
        return 'a';
    }

    static boolean isPrintable(int codePoint) {
        return switch (Character.getType(codePoint)) {
            case Character.CONTROL,
                    Character.FORMAT,
                    Character.SURROGATE,
                    Character.PRIVATE_USE,
                    Character.UNASSIGNED,
                    Character.LINE_SEPARATOR,
                    Character.PARAGRAPH_SEPARATOR -> false;
            default -> true;
        };
    }

    private static String ofCodePoints(List<Integer> codePoints) {
        StringBuilder out = new StringBuilder(codePoints.size());
        codePoints.forEach(out::appendCodePoint);
        return out.toString();
    }
}
