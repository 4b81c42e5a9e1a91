package io.sluice.broker.error;

import java.nio.charset.StandardCharsets;

/**
 * The sentence of an ERROR, PUBLISH_ERROR, TX_ABORTED or CLOSE as the broker sends it. A refusal may quote what the
 * client sent (a queue name, a setting key, each up to the 65,535 bytes a wire string holds), and a sentence longer
 * than a wire string cannot be encoded at all: building the frame threw on the event loop, and a client's mistake
 * became INTERNAL_ERROR, a closed connection and a stack trace in the log. Sentences are cut to
 * {@value #MAX_BYTES} bytes of UTF-8, at a character boundary, saying so.
 */
public final class Sentences {
    /** The longest sentence sent, in UTF-8 bytes: well within a wire string, and far more than any sentence needs. */
    public static final int MAX_BYTES = 8192;

    private Sentences() {
    }

    /** {@code sentence}, or its beginning and how long it was if it is longer than {@link #MAX_BYTES}. */
    public static String fit(String sentence) {
        if (sentence == null || sentence.length() <= MAX_BYTES / 3) {
            return sentence;
        }
        int total = utf8Bytes(sentence);
        if (total <= MAX_BYTES) {
            return sentence;
        }
        String marker = "... (cut; " + total + " bytes in all)";
        int budget = MAX_BYTES - marker.length();
        int bytes = 0;
        int end = 0;
        while (end < sentence.length()) {
            int cp = sentence.codePointAt(end);
            int n = utf8Bytes(cp);
            if (bytes + n > budget) {
                break;
            }
            bytes += n;
            end += Character.charCount(cp);
        }
        return sentence.substring(0, end) + marker;
    }

    private static int utf8Bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }

    private static int utf8Bytes(int codePoint) {
        return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
    }
}
