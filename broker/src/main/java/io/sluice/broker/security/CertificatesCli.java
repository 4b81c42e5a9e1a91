package io.sluice.broker.security;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@code sluice certs}: the certificates of a cluster's mutual TLS ({@link ClusterCertificates}).
 *
 * <pre>
 * sluice certs ca DIR [--days N]                          the cluster's CA, unless DIR has one
 * sluice certs node DIR NAME HOST[,HOST...] [--days N]    NAME.pem and NAME.key for a node reached at HOST
 * </pre>
 */
public final class CertificatesCli {
    private static final int DEFAULT_DAYS = 825;
    private static final String USAGE = "usage: sluice certs ca DIR [--days N]\n"
            + "       sluice certs node DIR NAME HOST[,HOST...] [--days N]\n";

    private CertificatesCli() {
    }

    /** Runs one command; {@code args} excludes the word "certs". Returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        List<String> words = Arrays.asList(args);
        int days = DEFAULT_DAYS;
        int flag = words.indexOf("--days");
        if (flag >= 0) {
            if (flag + 1 >= words.size() || !words.get(flag + 1).matches("[1-9][0-9]{0,4}")) {
                err.println("sluice certs: --days takes a number of days from 1 to 99999");
                return 2;
            }
            days = Integer.parseInt(words.get(flag + 1));
            words = new ArrayList<>(words);
            words.remove(flag + 1);
            words.remove(flag);
        }
        try {
            if (words.size() == 2 && words.get(0).equals("ca")) {
                Path ca = new ClusterCertificates(Path.of(words.get(1))).ca(days);
                out.println("CA: " + ca + " (every node's cluster.tls.ca)");
                return 0;
            }
            if (words.size() == 4 && words.get(0).equals("node")) {
                List<String> hosts = Arrays.stream(words.get(3).split(",")).map(String::strip).filter(h -> !h.isEmpty()).toList();
                Path[] made = new ClusterCertificates(Path.of(words.get(1))).node(words.get(2), hosts, days, null);
                out.println("cluster.tls.certificate: " + made[0]);
                out.println("cluster.tls.private-key: " + made[1]);
                return 0;
            }
        } catch (IllegalArgumentException | IOException e) {
            err.println("sluice certs: " + e.getMessage());
            return 1;
        }
        err.print(USAGE);
        return 2;
    }
}
