package io.sluice.broker;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The broker's command line: bad arguments are one line on stderr and exit status 2, never a stack trace. */
class MainTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void shouldSayInOneLineThatAFlagNeedsAValue() {
        assertEquals(2, run("--port"));
        assertEquals("sluice: --port needs a value (try --help)\n", err());
    }

    /** bin/sluice passes its arguments to Main as they are: {@code verify --help} is the storage tool's usage, status 0. */
    @Test
    void verifyAndDumpWithHelpPrintTheStorageToolsUsage() {
        for (String command : List.of("verify", "dump")) {
            out.reset();
            err.reset();
            assertEquals(0, run(command, "--help"), command + ": " + err());
            assertTrue(out.toString(StandardCharsets.UTF_8).startsWith("usage: sluice-storage-tool verify <dataDir>"),
                    out.toString(StandardCharsets.UTF_8));
            assertEquals("", err(), command);
        }
    }

    /** A valued flag followed by another flag took that flag as its value: --port --config x set the port to "--config". */
    @Test
    void shouldRefuseAValuedFlagWhoseNextArgumentIsAnotherFlag() {
        for (String flag : List.of("--config", "--set", "--data-dir", "--listen", "--port", "--metrics-port")) {
            out.reset();
            err.reset();
            assertEquals(2, run(flag, "--check-config"), flag);
            assertEquals("sluice: " + flag + " needs a value; the argument after it, --check-config, is a flag (try --help)\n", err(),
                    flag);
        }
    }

    /**
     * An empty argument as a flag's value (a variable that was not set: --config "$CONF") was taken as given: --config ''
     * said "configuration file  is a directory" (the empty path is the working directory), --data-dir '' put the data
     * there. It is refused as --config= is, naming the flag.
     */
    @Test
    void shouldRefuseAnEmptyArgumentAsAFlagsValue() {
        for (String flag : List.of("--config", "--set", "--data-dir", "--listen", "--port", "--metrics-port")) {
            out.reset();
            err.reset();
            assertEquals(2, run(flag, "", "--check-config"), flag);
            assertEquals("sluice: " + flag + " needs a value; the argument after it is empty (try --help)\n", err(), flag);
        }
    }

    /** --name=value, the GNU form, took no flag: "unknown argument '--port=7000'". It does now, for every valued flag. */
    @Test
    void aValuedFlagTakesItsValueAfterAnEqualsSign(@TempDir Path dir) throws Exception {
        Path config = Files.writeString(dir.resolve("sluice.yaml"), "broker:\n  name: equals\n");
        assertEquals(0, run("--port=7000", "--config=" + config, "--set=broker.listen-address=127.0.0.2", "--data-dir=" + dir,
                "--check-config"), err());
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("127.0.0.2:7000"), out.toString(StandardCharsets.UTF_8));
        err.reset();
        assertEquals(2, run("--port=", "--check-config"));
        assertEquals("sluice: --port= has no value after the '=' (try --help)\n", err());
        err.reset();
        assertEquals(2, run("--check-config=yes"));
        assertEquals("sluice: --check-config takes no value, got --check-config=yes (try --help)\n", err());
        err.reset();
        assertEquals(2, run("--colour=red"));
        assertEquals("sluice: unknown argument '--colour=red' (try --help)\n", err());
    }

    @Test
    void shouldSayThatTheConfigurationPathIsADirectory(@TempDir Path dir) {
        assertEquals(2, run("--config", dir.toString(), "--check-config"));
        assertEquals("sluice: invalid configuration: configuration file " + dir + " is a directory; --config takes a YAML or"
                + " JSON file\n", err());
    }

    /** YAML 1.1 reads 0x1f as 31, 7_672 as 7672 and +7672 as 7672; a port is written in plain decimal digits or refused. */
    @Test
    void shouldRefuseAPortThatIsNotPlainDecimal() {
        for (String port : List.of("0x1f", "7_672", "+7672")) {
            err.reset();
            assertEquals(2, run("--port", port, "--check-config"), port);
            assertTrue(err().startsWith("sluice: invalid configuration: override broker.port=" + port + ": broker.port '" + port
                    + "' is not a whole number in plain decimal digits"), err());
        }
    }

    @Test
    void shouldListEveryFlagWithItsDefaultAndTheEnvironmentVariablesInHelp() throws Exception {
        assertEquals(0, run("--help"));
        String help = out.toString(StandardCharsets.UTF_8);
        for (String line : List.of("--data-dir DIR", "--listen ADDRESS", "--port N", "--metrics-port N", "--config FILE",
                "--set KEY=VALUE", "--version")) {
            assertTrue(help.contains("  " + line + " "), "help lists " + line + ":\n" + help);
        }
        assertTrue(help.contains("broker.data-dir (default: data)"), help);
        assertTrue(help.contains("broker.listen-address (default: 127.0.0.1)"), help);
        assertTrue(help.contains("broker.port (default: 7672)"), help);
        assertTrue(help.contains("metrics.port (default: 7673)"), help);
        Set<String> readByScript = new TreeSet<>();
        Matcher m = Pattern.compile("\\$\\{?(SLUICE_[A-Z_]+)").matcher(Files.readString(ROOT.resolve("bin/sluice")));
        while (m.find()) {
            readByScript.add(m.group(1));
        }
        assertEquals(readByScript, new TreeSet<>(BrokerFlags.ENVIRONMENT.keySet()), "help names the variables bin/sluice reads");
        for (String variable : readByScript) {
            assertTrue(help.contains("  " + variable + " "), "help names " + variable + ":\n" + help);
        }
    }

    @Test
    void shouldPrintTheVersionOfThisBuild() throws Exception {
        assertEquals(0, run("--version"));
        String pom = Files.readString(ROOT.resolve("pom.xml"));
        int start = pom.indexOf("<version>", pom.indexOf("<artifactId>sluice-parent</artifactId>")) + "<version>".length();
        assertEquals("sluice " + pom.substring(start, pom.indexOf("</version>", start)) + "\n", out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldSetTheMetricsPortWithItsOwnFlag() {
        assertEquals(2, run("--metrics-port", "70000"));
        assertEquals("sluice: invalid configuration:\n  - metrics.port 70000 is outside 0..65535\n", err());
    }

    @Test
    void shouldRefuseToStartWithAnOpenAdminPortOnANonLoopbackAddress(@TempDir Path dir) {
        assertEquals(2, run("--data-dir", dir.toString(), "--port", "0", "--metrics-port", "0", "--set", "metrics.listen-address=0.0.0.0"));
        assertTrue(err().startsWith("sluice: invalid configuration:\n  - metrics.listen-address 0.0.0.0 is not a loopback address"
                + " and auth.users is empty"), err());
        assertEquals(2, err().split("\n").length, "one problem, one line under the heading: " + err());
    }

    /** An emptied section (YAML null) once ended --check-config in a NullPointerException's stack trace and status 1. */
    @Test
    void shouldSayInOneLineThatASectionIsEmpty(@TempDir Path dir) throws Exception {
        Path config = dir.resolve("sluice.yaml");
        Files.writeString(config, "storage:\n#  durability: interval\n");
        assertEquals(2, run("--config", config.toString(), "--check-config"));
        assertEquals("sluice: invalid configuration: " + config + ": 'storage' is empty: is every key under it commented out?"
                + " Leave the section out for its defaults\n", err());
    }

    @Test
    void shouldRefuseAPortWithALeadingZero() {
        assertEquals(2, run("--port", "07672", "--check-config"));
        assertEquals("sluice: invalid configuration: override broker.port=07672: broker.port '07672' has a leading zero, which"
                + " YAML reads as an octal number; write 7672\n", err());
    }
}
