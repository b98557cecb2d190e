package dev.torchjob.operator.status;

import java.time.Instant;
import java.time.format.DateTimeParseException;

/** A time a status or the metadata holds, as text: one that does not parse is treated as absent. */
public final class StatusTime {
    private StatusTime() {
    }

    public static Instant parse(String text) {
        if (text == null) {
            return null;
        }
        try {
            return Instant.parse(text);
        } catch (DateTimeParseException e) {
            return null;
        }
    }
}
