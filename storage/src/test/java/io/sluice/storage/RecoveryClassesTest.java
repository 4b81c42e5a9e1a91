package io.sluice.storage;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The list of classes a store's open initialises first ({@link RecoveryClasses}) names classes that are there, so that
 * an upgrade of Chronicle that renames them shows here rather than as a slower start; and they initialise without
 * error outside an open.
 */
class RecoveryClassesTest {
    @Test
    void everyListedNameIsAClassOnTheClasspath() {
        List<String> names = RecoveryClasses.names();
        assertTrue(names.size() > 100, "the list holds " + names.size() + " names");
        assertTrue(names.contains(MessageStore.class.getName()), "the list names the store itself");
        List<String> missing = new ArrayList<>();
        for (String name : names) {
            try {
                Class.forName(name, false, RecoveryClassesTest.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                missing.add(name);
            }
        }
        assertEquals(List.of(), missing, "names in " + RecoveryClasses.LIST + " that are no class any more");
    }

    @Test
    void everyListedClassInitialises() {
        assertEquals(RecoveryClasses.names().size(), RecoveryClasses.initialise());
    }
}
