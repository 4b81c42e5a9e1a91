package io.sluice.broker.log;

/**
 * Text a client or a request chose (a user, a client name, a producer name, a consumer tag) as it may go into a log line:
 * a control character in it would otherwise end the line and forge the next (line feed, carriage return) or drive the
 * operator's terminal (ESC). Each is written as an escape ({@code \n}, {@code \r}, {@code \t}, {@code \\u001B}), and so
 * is a backslash ({@code \\}), so that an escape a client typed cannot pass for one made here.
 */
public final class Printable {
    private Printable() {
    }

    /** {@code text} with every control character and backslash escaped; null stays null. */
    public static String escape(String text) {
        if (text == null || text.chars().noneMatch(c -> Character.isISOControl(c) || c == '\\' || c == 0x2028 || c == 0x2029)) {
            return text;
        }
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\\' -> out.append("\\\\");
                default -> {
                    if (Character.isISOControl(c) || c == 0x2028 || c == 0x2029) {
                        out.append(String.format("\\u%04X", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.toString();
    }

    /**
     * Text already escaped ({@link #escape}), such as a connection's description: a {@link RateLimitedLog}, which escapes
     * its arguments, writes it as it is rather than doubling its backslashes.
     */
    public record Escaped(String text) {
        @Override
        public String toString() {
            return text;
        }
    }

    /** {@code escapedText}, marked as escaped already (see {@link Escaped}). */
    public static Escaped escaped(String escapedText) {
        return new Escaped(escapedText);
    }

    /** The first control character of {@code text}, or -1 if it has none. */
    public static int firstControl(String text) {
        return text == null ? -1 : text.chars().filter(Character::isISOControl).findFirst().orElse(-1);
    }
}
