package dev.torchjob.operator.kueue;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * The name Kueue's own integrations give a job's Workload: {@code <kind>-<job>} cut to fit, then
 * {@code -} and 5 hex characters of a SHA-1 of kind, group, job name and UID, so a job recreated
 * under the same name gets another Workload.
 */
public final class WorkloadName {
    static final int MAX_LENGTH = 253;
    private static final int HASH_LENGTH = 5;

    private WorkloadName() {
    }

    public static String of(String kind, String group, String jobName, String jobUid) {
        String prefix = kind.toLowerCase(Locale.ROOT) + "-" + jobName;
        int room = MAX_LENGTH - HASH_LENGTH - 1;
        if (prefix.length() > room) {
            prefix = prefix.substring(0, room);
        }
        return prefix + "-" + hash(kind + "\n" + group + "\n" + jobName + "\n" + jobUid);
    }

    private static String hash(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest).substring(0, HASH_LENGTH);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is part of every Java runtime", e);
        }
    }
}
