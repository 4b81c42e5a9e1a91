package io.sluice.broker.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What an operator writes is never silently dropped, truncated or reinterpreted, and never ends in a
 * NullPointerException: an emptied section or list entry, a scalar where a section belongs, a fraction for a whole
 * number, a leading zero, a number past its type's range, a key given twice are each a {@link ConfigException} naming
 * the key (found by a review).
 */
class ConfigLoaderBadInputTest {
    @TempDir
    Path dir;

    private Path file;

    @BeforeEach
    void name() {
        file = dir.resolve("sluice.yaml");
    }

    private String refused(String yaml) throws Exception {
        Files.writeString(file, yaml);
        return assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of())).getMessage();
    }

    private static String refusedOverride(String key, String value) {
        return assertThrows(ConfigException.class, () -> new ConfigLoader().load(null, Map.of(key, value))).getMessage();
    }

    /** A section whose keys are all commented out is YAML null: the field would be null, and the start a NullPointerException. */
    @Test
    void aSectionWithEveryKeyCommentedOutIsRefusedNamingIt() throws Exception {
        String m = refused("tls:\n#  enabled: true\n#  certificate: /etc/sluice/cert.pem\n");
        assertEquals("invalid configuration: " + file + ": 'tls' is empty: is every key under it commented out?"
                + " Leave the section out for its defaults", m);
        for (String section : new String[] {"broker", "auth", "storage", "queues", "limits", "metrics", "transactions", "cluster"}) {
            assertEquals("invalid configuration: " + file + ": '" + section + "' is empty: is every key under it commented out?"
                    + " Leave the section out for its defaults", refused(section + ":\n#  x: 1\n"), section);
        }
        assertEquals("invalid configuration: " + file + ": 'cluster.tls' is empty: is every key under it commented out?"
                + " Leave the section out for its defaults", refused("cluster:\n  tls:\n"));
    }

    @Test
    void anEmptyListOrListEntryIsRefusedNamingIt() throws Exception {
        assertEquals("invalid configuration: " + file + ": 'auth.users[0]' is empty: a '-' with nothing after it",
                refused("auth:\n  users:\n    -\n"));
        assertEquals("invalid configuration: " + file + ": 'auth.users' is empty: is every entry under it commented out?"
                + " Write [] for no entries, or leave the key out for its default", refused("auth:\n  users:\n#    - name: app\n"));
        // Null here would mean every action on every queue: the restrictions an operator commented out are not widened.
        assertEquals("invalid configuration: " + file + ": 'auth.anonymous-permissions' is empty: is every entry under it"
                + " commented out? Write [] for no entries, or leave the key out for its default",
                refused("auth:\n  anonymous-permissions:\n#    - queues: public.*\n"));
        assertEquals("invalid configuration: " + file + ": 'cluster.nodes[1]' is empty: a '-' with nothing after it",
                refused("cluster:\n  nodes:\n    - id: 1\n    -\n"));
        assertEquals("invalid configuration: " + file + ": 'auth.users[0].permissions[0].actions[1]' is empty: a '-' with"
                + " nothing after it", refused("auth:\n  users:\n    - name: app\n      permissions:\n        - queues: q\n"
                + "          actions: [publish, ~]\n"));
    }

    @Test
    void anEmptyScalarThatIsNotAStringIsRefusedNamingWhatItNeeds() throws Exception {
        assertEquals("invalid configuration: " + file + ": 'broker.port' is empty; it needs a whole number", refused("broker:\n  port:\n"));
        assertEquals("invalid configuration: " + file + ": 'metrics.scrape-access' is empty; it needs one of open, authenticated",
                refused("metrics:\n  scrape-access:\n"));
    }

    /** {@code tls} is a section; {@code tls: true} must not be accepted while TLS stays off. */
    @Test
    void aScalarOrListWhereASectionBelongsIsRefusedNotIgnored() throws Exception {
        assertEquals("invalid configuration: " + file + ": 'tls' must be a section of keys, got true", refused("tls: true\n"));
        assertEquals("invalid configuration: " + file + ": 'broker' must be a section of keys, got a list", refused("broker: [1]\n"));
        assertEquals("invalid configuration: " + file + ": 'auth.users[0]' must be a section of keys, got \"app\"",
                refused("auth:\n  users: [app]\n"));
        assertEquals("invalid configuration: override broker=x: 'broker' must be a section of keys, got \"x\"",
                refusedOverride("broker", "x"));
    }

    @Test
    void aFileThatIsNotAMappingOfSectionsIsRefused() throws Exception {
        assertEquals("invalid configuration: " + file + ": the configuration must be a mapping of sections, got a list",
                refused("- broker:\n    port: 9000\n"));
        assertEquals("invalid configuration: " + file + ": the configuration must be a mapping of sections, got a single string",
                refused("port 9000\n"));
        assertEquals("invalid configuration: " + file + ": holds no settings (is every line a comment?); the configuration"
                + " must be a mapping of sections", refused("# broker:\n#   port: 9000\n"));
    }

    @Test
    void aFractionForAWholeNumberKeyIsRefusedNotTruncated() throws Exception {
        assertEquals("invalid configuration: " + file + ": queues.max-deliveries '2.7' is not a whole number",
                refused("queues:\n  max-deliveries: 2.7\n"));
        assertEquals("invalid configuration: override storage.segment-bytes=1.5: storage.segment-bytes '1.5' is not a whole number",
                refusedOverride("storage.segment-bytes", "1.5"));
        assertEquals(0.5, new ConfigLoader().load(null, Map.of("storage.relocate-max-live-ratio", "0.5")).storage.relocateMaxLiveRatio);
    }

    /** YAML 1.1 reads 07672 as octal 4026. */
    @Test
    void aLeadingZeroIsRefusedNotReadAsOctal() throws Exception {
        assertEquals("invalid configuration: override broker.port=07672: broker.port '07672' has a leading zero, which YAML"
                + " reads as an octal number; write 7672", refusedOverride("broker.port", "07672"));
        assertEquals("invalid configuration: " + file + ": broker.port '017672' has a leading zero, which YAML reads as an"
                + " octal number; write 17672", refused("broker:\n  port: 017672\n"));
        assertEquals("invalid configuration: " + file + ": storage.relocate-max-live-ratio '010' has a leading zero, which"
                + " YAML reads as an octal number; write 10", refused("storage:\n  relocate-max-live-ratio: 010\n"));
        // Not octal to YAML (8 is no octal digit): a string, which the number key reads as decimal, as meant.
        assertEquals(8, new ConfigLoader().load(null, Map.of("broker.port", "08")).broker.port);
        assertEquals(0, new ConfigLoader().load(null, Map.of("broker.port", "0")).broker.port);
        // A string key takes the digits as written, where YAML made 0700 into "448".
        assertEquals("0700", new ConfigLoader().load(null, Map.of("broker.name", "0700")).broker.name);
        Files.writeString(file, "broker:\n  name: 007\n");
        assertEquals("007", new ConfigLoader().load(file, Map.of()).broker.name);
    }

    @Test
    void aValuePastItsTypesRangeSaysTheValueAndTheRange() throws Exception {
        assertEquals("invalid configuration: " + file + ": broker.max-frame-bytes 4294967296 is beyond the range of this"
                + " key's whole number (-2147483648..2147483647)", refused("broker:\n  max-frame-bytes: 4294967296\n"));
        assertEquals("invalid configuration: override storage.segment-bytes=99999999999999999999: storage.segment-bytes"
                + " 99999999999999999999 is beyond the range of this key's whole number (-9223372036854775808..9223372036854775807)",
                refusedOverride("storage.segment-bytes", "99999999999999999999"));
    }

    /**
     * --config naming a file that is no configuration (/etc/shadow, a secret) once echoed its first line: as an unknown
     * key, or as the value that was not a mapping. The refusal names the file and the place, never what is written there.
     */
    @Test
    void aFileThatIsNotConfigurationIsRefusedWithoutEchoingItsContent() throws Exception {
        Map<String, String> refusals = new java.util.LinkedHashMap<>();
        refusals.put("root:$6$salt$hash:19000:0:99999:7:::\nalice:$6$pepper$hash:19000:0:99999:7:::\n",
                "line 1, column 1 holds a key that is no configuration key (keys are letters, digits, '-', '_' and '.');"
                        + " is this a Sluice configuration file?");
        refusals.put("s3cr3t-token-value\n", "the configuration must be a mapping of sections, got a single string");
        refusals.put("42\n", "the configuration must be a mapping of sections, got a single number");
        refusals.put("[s3cr3t, token]\n", "the configuration must be a mapping of sections, got a list");
        for (Map.Entry<String, String> refusal : refusals.entrySet()) {
            assertEquals("invalid configuration: " + file + ": " + refusal.getValue(), refused(refusal.getKey()));
        }
        Files.write(file, new byte[] {0, 1, 2, 's', '3', 'c', 'r', '3', 't'});
        String binary = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of())).getMessage();
        assertTrue(binary.startsWith("invalid configuration: " + file + ": ") && !binary.contains("s3cr3t"), binary);
    }

    /**
     * A file that is not valid YAML was refused with the place alone ("not valid YAML at line 3, column 8"): the parser's
     * reason is given now, and where a construct began that the error ends, but never the parser's copy of the line
     * (the file may be one named by mistake; see below), and in one line.
     */
    @Test
    void aYamlSyntaxErrorSaysWhatTheParserFoundWhere() throws Exception {
        assertEquals("invalid configuration: " + file + ": not valid YAML at line 3, column 8: mapping values are not allowed"
                + " here", refused("broker:\n  port: 7000\n   name: x\n"));
        assertEquals("invalid configuration: " + file + ": not valid YAML at line 3, column 1: found unexpected end of stream"
                + " (while scanning a quoted scalar that begins at line 2, column 9)", refused("broker:\n  name: \"s3cr3t\n"));
        assertEquals("invalid configuration: " + file + ": not valid YAML at line 3, column 1: expected ',' or ']', but got"
                + " <stream end> (while parsing a flow sequence that begins at line 2, column 10)",
                refused("auth:\n  users: [\"s3cr3t\"\n"));
        assertEquals("invalid configuration: " + file + ": not valid YAML at line 2, column 1: found character '\\t(TAB)' that"
                + " cannot start any token. (Do not use \\t(TAB) for indentation) (while scanning for the next token)",
                refused("broker:\n\tport: 7000\n"));
    }

    /**
     * Jackson's YAML parser does not resolve an alias: it gives the anchor's name as a string, so {@code data-dir: *d} put the
     * data in a directory named "d" without a word, and a section's alias was refused as the string it is not. Its
     * replaying parser, which does resolve them, gave an alias of an anchor that holds an alias as an empty list (found
     * while deciding this). An alias, and YAML 1.1's merge key {@code <<} that takes one, are refused at their place; the
     * anchor's name is not shown (it is text of the file).
     */
    @Test
    void aYamlAliasOrMergeKeyIsRefusedNotReadAsTheAnchorsName() throws Exception {
        assertEquals("invalid configuration: " + file + ": line 3, column 13 holds a YAML alias (*name), which the configuration"
                + " does not resolve: write the value out where it is used", refused("broker:\n  name: &d edge\n  data-dir: *d\n"));
        assertEquals("invalid configuration: " + file + ": line 3, column 9 holds a YAML alias (*name), which the configuration"
                + " does not resolve: write the value out where it is used",
                refused("queues: &q\n  max-deliveries: 5\nlimits: *q\n"));
        assertEquals("invalid configuration: " + file + ": line 4, column 3 holds a YAML merge key (<<), which the configuration"
                + " does not take: write the keys out in the section", refused("x: &b\n  port: 7000\nbroker:\n  <<: *b\n"));
        // An anchor that nothing refers to changes nothing, and is read as YAML reads it.
        Files.writeString(file, "broker: &b\n  name: &n edge\n");
        assertEquals("edge", new ConfigLoader().load(file, Map.of()).broker.name);
    }

    /**
     * Jackson's YAML parser reads a tag as it likes or not at all: {@code !!binary} made broker.name the base64 text back
     * again, {@code !custom} and {@code !!python/object} were dropped without a word, on a value, a section, a list entry,
     * a key and the whole document. A tag is refused at its place, naming it and what it is on; an override's value is
     * quoted, so a tag written there is the text it is.
     */
    @Test
    void aYamlTagIsRefusedNamingItsPlaceWhatItIsOnAndTheTag() throws Exception {
        String refusal = ", which the configuration does not take: write it without the tag";
        assertEquals("invalid configuration: " + file + ": line 2, column 9 holds a YAML tag (!!binary) on 'broker.name'" + refusal,
                refused("broker:\n  name: !!binary ZWRnZQ==\n"));
        assertEquals("invalid configuration: " + file + ": line 2, column 15 holds a YAML tag (!custom) on 'storage.durability'"
                + refusal, refused("storage:\n  durability: !custom always\n"));
        assertEquals("invalid configuration: " + file + ": line 1, column 9 holds a YAML tag (!!python/object:os.system) on"
                + " 'broker'" + refusal, refused("broker: !!python/object:os.system\n  port: 7000\n"));
        assertEquals("invalid configuration: " + file + ": line 3, column 7 holds a YAML tag (!user) on 'auth.users[0]'" + refusal,
                refused("auth:\n  users:\n    - !user\n      name: app\n"));
        assertEquals("invalid configuration: " + file + ": line 2, column 3 holds a YAML tag (!!str) on a key of 'broker'" + refusal,
                refused("broker:\n  !!str port: 7000\n"));
        assertEquals("invalid configuration: " + file + ": line 3, column 3 holds a YAML tag (!!str) on a key of 'broker'" + refusal,
                refused("broker:\n  port: 7000\n  !!str name: edge\n"));
        assertEquals("invalid configuration: " + file + ": line 1, column 1 holds a YAML tag (!!str) on a top-level key" + refusal,
                refused("!!str broker:\n  port: 7000\n"));
        assertEquals("invalid configuration: " + file + ": line 1, column 5 holds a YAML tag (!config) on the document" + refusal,
                refused("--- !config\nbroker:\n  port: 7000\n"));
        assertEquals("invalid configuration: " + file + ": line 2, column 9 holds a YAML tag (!<tag:example.com,2026:x>) on"
                + " 'broker.name'" + refusal, refused("broker:\n  name: !<tag:example.com,2026:x> edge\n"));
        assertEquals("!!binary ZWRnZQ==", new ConfigLoader().load(null, Map.of("broker.name", "!!binary ZWRnZQ==")).broker.name);
    }

    /** A second YAML document was ignored without a word: the configuration is one document. */
    @Test
    void aSecondDocumentInTheFileIsRefused() throws Exception {
        assertEquals("invalid configuration: " + file + ": holds a second YAML document at line 4, column 1; the configuration"
                + " is one document", refused("broker:\n  port: 7000\n---\nbroker:\n  port: 8000\n"));
    }

    @Test
    void anUnreadableFileIsSaidToBeUnreadable() throws Exception {
        Files.writeString(file, "broker:\n  port: 7000\n");
        Files.setPosixFilePermissions(file, java.util.Set.of());
        assertEquals("configuration file " + file + " cannot be read: permission denied to user " + System.getProperty("user.name"), ConfigLoader.cannotRead(file, new java.nio.file.AccessDeniedException(file.toString())));
        // End to end where the permissions hold (root reads any file).
        org.junit.jupiter.api.Assumptions.assumeFalse(Files.isReadable(file), "this user reads a file of mode 000");
        assertEquals("invalid configuration: configuration file " + file + " cannot be read: permission denied to user "
                + System.getProperty("user.name"), assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()))
                .getMessage());
    }

    /**
     * YAML 1.1 reads 0x1f as 31, 7_672 and +7672 as 7672, .5 as 0.5 and 1e-1 as 0.1: a number key takes plain decimal
     * digits (a '-' before them, a '.' in a fraction) and refuses the rest, in a file as in an override.
     */
    @Test
    void aNumberNotWrittenInPlainDecimalIsRefused() throws Exception {
        assertEquals("invalid configuration: " + file + ": broker.port '0x1f' is not a whole number in plain decimal digits;"
                + " YAML reads it as 31", refused("broker:\n  port: 0x1f\n"));
        assertEquals("invalid configuration: " + file + ": broker.port '7_672' is not a whole number in plain decimal digits;"
                + " YAML reads it as 7672", refused("broker:\n  port: 7_672\n"));
        assertEquals("invalid configuration: " + file + ": broker.port '+7672' is not a whole number in plain decimal digits;"
                + " YAML reads it as 7672", refused("broker:\n  port: +7672\n"));
        assertEquals("invalid configuration: " + file + ": storage.relocate-max-live-ratio '.5' is not a number in plain"
                + " decimal digits; YAML reads it as 0.5", refused("storage:\n  relocate-max-live-ratio: .5\n"));
        assertEquals("invalid configuration: " + file + ": storage.relocate-max-live-ratio '1e-1' is not a number in plain"
                + " decimal digits; YAML reads it as 0.1", refused("storage:\n  relocate-max-live-ratio: 1e-1\n"));
        assertEquals("invalid configuration: " + file + ": broker.port '0x1f' is not a whole number in plain decimal digits",
                refused("broker:\n  port: \"0x1f\"\n"));
        assertEquals("invalid configuration: override broker.port=+7672: broker.port '+7672' is not a whole number in plain"
                + " decimal digits", refusedOverride("broker.port", "+7672"));
        assertEquals("invalid configuration: override queues.ack-timeout-ms=30_000: queues.ack-timeout-ms '30_000' is not a"
                + " whole number in plain decimal digits", refusedOverride("queues.ack-timeout-ms", "30_000"));
        // Plain decimal stays accepted, and a string key takes the text as written, where YAML made 0x1f into "31".
        Files.writeString(file, "broker:\n  port: 7000\n  name: 0x1f\nstorage:\n  relocate-max-live-ratio: 0.25\n");
        BrokerConfig config = new ConfigLoader().load(file, Map.of());
        assertEquals(7000, config.broker.port);
        assertEquals("0x1f", config.broker.name);
        assertEquals(0.25, config.storage.relocateMaxLiveRatio);
        assertEquals("invalid configuration:\n  - broker.heartbeat-interval-ms -1 is outside 0..3600000",
                refusedOverride("broker.heartbeat-interval-ms", "-1"), "a negative number is plain decimal, refused by its range");
    }

    /**
     * YAML 1.1 reads yes, no, on and off (any case) as booleans, and Jackson took 1 and 0 for true and false: a boolean
     * key took {@code allow-anonymous: on} without a word, where YAML 1.2 and most readers of the file see a word. Only
     * true and false (or True, TRUE, False, FALSE) are a boolean now; the rest is refused saying to write one of them.
     */
    @Test
    void aBooleanKeyTakesTrueOrFalseAndRefusesWhatYamlOnePointOneReadsAsOne() throws Exception {
        assertEquals("invalid configuration: " + file + ": auth.allow-anonymous 'yes' is not true or false (YAML 1.1 reads it as"
                + " true, YAML 1.2 as the word); write true or false", refused("auth:\n  allow-anonymous: yes\n"));
        assertEquals("invalid configuration: " + file + ": auth.allow-anonymous 'off' is not true or false (YAML 1.1 reads it as"
                + " false, YAML 1.2 as the word); write true or false", refused("auth:\n  allow-anonymous: off\n"));
        for (String word : new String[] {"no", "on", "Yes", "NO", "On", "OFF", "y", "n", "1", "0", "'yes'", "\"1\""}) {
            String m = refused("metrics:\n  allow-anonymous-remote: " + word + "\n");
            String written = word.replace("'", "").replace("\"", "");
            assertTrue(m.contains("metrics.allow-anonymous-remote '" + written + "' is not true or false")
                    && m.endsWith("write true or false"), word + ": " + m);
        }
        for (String word : new String[] {"yes", "on", "1", "y"}) {
            String m = refusedOverride("tls.enabled", word);
            assertTrue(m.contains("tls.enabled '" + word + "' is not true or false") && m.endsWith("write true or false"), m);
        }
        for (String word : new String[] {"true", "True", "TRUE", "\"true\""}) {
            Files.writeString(file, "auth:\n  allow-anonymous: " + word + "\nmetrics:\n  allow-anonymous-remote: false\n");
            assertTrue(new ConfigLoader().load(file, Map.of()).auth.allowAnonymous, word);
        }
        Files.writeString(file, "auth:\n  allow-anonymous: FALSE\n");
        assertEquals(false, new ConfigLoader().load(file, Map.of()).auth.allowAnonymous);
        assertEquals(false, new ConfigLoader().load(null, Map.of("auth.allow-anonymous", "false")).auth.allowAnonymous);
    }

    /**
     * A string key took YAML 1.1's booleans as Jackson writes them: a user named no became a user named 'false', a
     * queue glob on became 'true', and the refusals of a choice named a value nobody wrote ("durability 'false'").
     * .inf and .nan were "not valid YAML". Each is kept as written now, and refused as written where it does not fit.
     */
    @Test
    void aStringKeyTakesWhatYamlOnePointOneReadsAsABooleanOrInfinityAsWritten() throws Exception {
        String hash = "pbkdf2-sha256:210000:AAAAAAAAAAAAAAAAAAAAAA==:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        Files.writeString(file, "broker:\n  name: no\nauth:\n  users:\n    - name: off\n      password-hash: \"" + hash + "\"\n"
                + "      permissions:\n        - queues: on\n          actions: [publish]\n");
        BrokerConfig config = new ConfigLoader().load(file, Map.of());
        assertEquals("no", config.broker.name);
        assertEquals("off", config.auth.users.get(0).name);
        assertEquals("on", config.auth.users.get(0).permissions.get(0).queues);
        for (String word : new String[] {"yes", "Yes", "ON", "Off", ".inf", "-.inf", ".NaN", "1e3", "true"}) {
            Files.writeString(file, "broker:\n  name: " + word + "\n");
            assertEquals(word, new ConfigLoader().load(file, Map.of()).broker.name, word);
        }
        assertTrue(refused("storage:\n  durability: off\n").contains("storage.durability 'off' is not one of always, interval,"
                + " never"));
        assertTrue(refused("tls:\n  client-auth: no\n").contains("tls.client-auth 'no' is not one of none, optional, require"));
        String action = refused("auth:\n  users:\n    - name: app\n      password-hash: \"" + hash + "\"\n      permissions:\n"
                + "        - queues: q\n          actions: [publish, no]\n");
        assertTrue(action.contains("action 'no' is not one of"), action);
        assertTrue(refused("auth:\n  users:\n    - name: app\n      password-hash: yes\n")
                .contains("password-hash of user 'app' has 1 of the 4 parts separated by ':'")); // the text yes, checked as a hash
        assertEquals("invalid configuration: " + file + ": storage.relocate-max-live-ratio '.inf' is not a number in plain decimal"
                + " digits; YAML reads it as infinity", refused("storage:\n  relocate-max-live-ratio: .inf\n"));
        assertEquals("invalid configuration: " + file + ": broker.port '.nan' is not a whole number in plain decimal digits; YAML"
                + " reads it as not-a-number", refused("broker:\n  port: .nan\n"));
        assertEquals("invalid configuration: " + file + ": broker.port 'on' is not a whole number",
                refused("broker:\n  port: on\n"));
    }

    /**
     * Two users of one name were both taken and the last one's password and permissions won without a word; a name with
     * a ':' was taken though HTTP Basic cannot carry it (the admin API splits user:password at the first ':'), and one
     * with a control character would be written as it is into the log of a failed login.
     */
    @Test
    void aUserNameGivenTwiceOrOneTheAdminApiCannotCarryIsRefused() throws Exception {
        String user = "    - name: %s\n      password-hash: \"pbkdf2-sha256:210000:AAAAAAAAAAAAAAAAAAAAAA==:"
                + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"\n";
        String twice = refused("auth:\n  users:\n" + user.formatted("app") + user.formatted("ops") + user.formatted("app"));
        assertTrue(twice.contains("auth.users[2].name 'app' is given twice (also auth.users[0]); give each user once"), twice);
        String colon = refused("auth:\n  users:\n" + user.formatted("\"ops:admin\""));
        assertTrue(colon.contains("auth.users[0].name 'ops:admin' holds a ':', which HTTP Basic credentials cannot carry"), colon);
        String control = refused("auth:\n  users:\n" + user.formatted("\"ops\\tadmin\""));
        assertTrue(control.contains("auth.users[0].name holds a control character (U+0009)"), control);
    }

    @Test
    void aKeyGivenTwiceIsRefusedNamingIt() throws Exception {
        assertEquals("invalid configuration: " + file + ": key 'broker.port' appears twice (again at line 3); give it once",
                refused("broker:\n  port: 9000\n  port: 9001\n"));
        assertEquals("invalid configuration: " + file + ": key 'broker' appears twice (again at line 3); give it once",
                refused("broker:\n  port: 9000\nbroker:\n  name: b\n"));
        assertEquals("invalid configuration: " + file + ": key 'auth.users[1].name' appears twice (again at line 5); give it once",
                refused("auth:\n  users:\n    - name: a\n    - name: b\n      name: c\n"));
    }

    /**
     * Every key of every section (and of a user, a grant and a node) left empty: the broker either starts or says why,
     * never another exception (a null string key once reached code that did not expect it).
     */
    @Test
    void everyKeyLeftEmptyIsAConfigErrorOrAccepted() throws Exception {
        List<String> yamls = new ArrayList<>();
        for (Field section : BrokerConfig.class.getFields()) {
            if (!Modifier.isStatic(section.getModifiers())) {
                for (String key : keys(section.getType())) {
                    yamls.add(name(section) + ":\n  " + key + ":\n");
                }
            }
        }
        for (String key : keys(BrokerConfig.User.class)) {
            yamls.add("auth:\n  users:\n    - name: app\n      " + key + ":\n");
        }
        for (String key : keys(BrokerConfig.Permission.class)) {
            yamls.add("auth:\n  anonymous-permissions:\n    - queues: q\n      " + key + ":\n");
        }
        for (String key : keys(BrokerConfig.Node.class)) {
            yamls.add("cluster:\n  enabled: true\n  node-id: 1\n  nodes:\n    - id: 1\n      host: h\n      raft-port: 1\n"
                    + "      client-port: 2\n      " + key + ":\n");
        }
        for (String yaml : yamls) {
            Files.writeString(file, yaml);
            try {
                new ConfigLoader().load(file, Map.of());
            } catch (ConfigException expected) {
                // says why
            } catch (RuntimeException e) {
                throw new AssertionError("for\n" + yaml + "the loader threw " + e, e);
            }
        }
        assertTrue(yamls.size() > 80, "every key: " + yamls.size());
    }

    private static List<String> keys(Class<?> section) {
        List<String> keys = new ArrayList<>();
        for (Field f : section.getFields()) {
            if (!Modifier.isStatic(f.getModifiers())) {
                keys.add(name(f));
            }
        }
        return keys;
    }

    private static String name(Field f) {
        JsonProperty p = f.getAnnotation(JsonProperty.class);
        return p != null ? p.value() : f.getName();
    }
}
