package io.sluice.storage;

/** Byte-array searches for the tests that find a record's bytes in a file to damage them. */
public final class ByteArrays {
    private ByteArrays() {
    }

    /** Where {@code needle} first occurs in {@code haystack}, or -1. */
    public static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i <= haystack.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
