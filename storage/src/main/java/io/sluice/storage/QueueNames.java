package io.sluice.storage;

/**
 * The rule for queue names, which are also directory names: 1 to {@value #MAX_LENGTH} characters
 * from {@code A-Z a-z 0-9 . _ -}, not starting with a dot or a dash.
 */
public final class QueueNames {
    public static final int MAX_LENGTH = 200;

    private QueueNames() {
    }

    /** Throws {@link IllegalArgumentException} naming the problem when {@code name} is not a valid queue name. */
    public static String validate(String name) {
        if (name == null || name.isEmpty()) {
            throw new InvalidQueueNameException("queue name is empty; it needs 1.." + MAX_LENGTH + " characters");
        }
        if (name.length() > MAX_LENGTH) {
            throw new InvalidQueueNameException("queue name of " + name.length() + " characters exceeds the maximum of " + MAX_LENGTH);
        }
        char first = name.charAt(0);
        if (first == '.' || first == '-') {
            throw new InvalidQueueNameException("queue name '" + name + "' starts with '" + first + "'; it must start with a letter, digit or '_'");
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            if (!ok) {
                throw new InvalidQueueNameException("queue name '" + name + "' has character '" + c + "' at position " + i
                        + "; allowed are A-Z a-z 0-9 . _ -");
            }
        }
        return name;
    }

    public static boolean isValid(String name) {
        try {
            validate(name);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
