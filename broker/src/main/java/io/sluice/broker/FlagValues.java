package io.sluice.broker;

/**
 * The value of a command-line flag that takes one, written {@code --port N} or {@code --port=N}. Written apart, the value
 * is the argument after the flag, unless there is none, it is empty or it is another flag: taken as the value, the next
 * flag was lost and its own value read as an argument of its own ({@code --port --config x} set the port to "--config").
 * Written with '=', the value is whatever follows the '=', so a value that starts with {@code --} (a password may) is
 * given as {@code --password=--x}; a file of such a name can also be given as {@code ./--name}. Shared by
 * {@code sluice} and {@code sluice admin}.
 */
public final class FlagValues {
    private FlagValues() {
    }

    /** A flag written {@code --name=value}: its name ({@code --name}) and its value (maybe empty). */
    public record Inline(String name, String value) {
    }

    /** {@code arg} split at its first '=' if it is a flag ({@code --...}) written with one; null otherwise. */
    public static Inline inline(String arg) {
        int eq = arg.indexOf('=');
        return arg.startsWith("--") && eq > 2 ? new Inline(arg.substring(0, eq), arg.substring(eq + 1)) : null;
    }

    /**
     * Why {@code next}, the argument after {@code flag} (null at the end), cannot be its value; null if it can. A
     * {@code secret} value (a password) is not repeated, and the refusal says how to give one that starts with --.
     */
    public static String missing(String flag, String next, boolean secret) {
        if (next == null) {
            return flag + " needs a value";
        }
        if (next.isEmpty()) {
            // As --flag= is: an empty argument is most often a variable that was not set (--config "$CONF"), and --config ''
            // was the working directory.
            return flag + " needs a value; the argument after it is empty";
        }
        if (!next.startsWith("--")) {
            return null;
        }
        return secret ? flag + " needs a value; the argument after it starts with --, as a flag does"
                : flag + " needs a value; the argument after it, " + next + ", is a flag";
    }

    /** Why {@code inline} cannot be the value of a flag that takes one ({@code --port=}); null if it can. */
    public static String missing(Inline inline) {
        return inline.value().isEmpty() ? inline.name() + "= has no value after the '='" : null;
    }

    /** The refusal of {@code --flag=value} for a flag that takes no value. */
    public static String noValue(Inline inline) {
        return inline.name() + " takes no value, got " + inline.name() + "=" + inline.value();
    }
}
