package io.sluice.broker;

/**
 * The value of a command-line flag that takes one ({@code --port N}): the argument after it, unless there is none or it
 * is another flag. Taken as the value, the next flag was lost and its own value read as an argument of its own:
 * {@code --port --config x} set the port to "--config". No value of these flags starts with {@code --} (a file of such a
 * name can be given as {@code ./--name}); shared by {@code sluice} and {@code sluice admin}.
 */
public final class FlagValues {
    private FlagValues() {
    }

    /**
     * Why {@code next}, the argument after {@code flag} (null at the end), cannot be its value; null if it can. A
     * {@code secret} value (a password) is not repeated.
     */
    public static String missing(String flag, String next, boolean secret) {
        if (next == null) {
            return flag + " needs a value";
        }
        if (!next.startsWith("--")) {
            return null;
        }
        return secret ? flag + " needs a value; the argument after it starts with --, as a flag does"
                : flag + " needs a value; the argument after it, " + next + ", is a flag";
    }
}
