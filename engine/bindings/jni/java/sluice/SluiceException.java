package sluice;

import java.nio.charset.StandardCharsets;

/** A Sluice failure: the status code (gguf/base/sl_status.h, e.g. -22 SL_EINVAL, -2 SL_ENOENT,
 *  -1007 SL_ECTX) and Sluice's own message naming what failed and where. Unchecked, so Kotlin
 *  callers see it unchanged. */
public class SluiceException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;

    public SluiceException(int status, String message) {
        super(message);
        this.status = status;
    }

    SluiceException(int status, byte[] utf8Message) {   // thrown by the bridge
        this(status, new String(utf8Message, StandardCharsets.UTF_8));
    }

    /** Negative SL_E* status code. */
    public int status() { return status; }

    public static final int EINVAL = -22, ENOENT = -2, ENOMEM = -12, EIO = -5, ECTX = -1007,
                            EFORMAT = -1001, EUNSUPPORTED = -1004;
}
