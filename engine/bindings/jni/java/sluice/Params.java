package sluice;

import java.nio.charset.StandardCharsets;

/** Model parameters (sl_model_params); 0 means "the library decides" as in sluice.h. Modes and
 *  I/O backends are the library's values of their names (sluice_stream.h). */
public final class Params {
    public static final int MODE_AUTO = modeValue("auto"), MODE_RESIDENT = modeValue("resident"),
                            MODE_STREAM = modeValue("stream"), MODE_MMAP = modeValue("mmap");
    public static final int IO_AUTO = ioValue("auto"), IO_URING = ioValue("uring"), IO_PREAD = ioValue("pread");
    public int nThreads = 0, nCtx = 0, nBatch = 0, mode = MODE_AUTO, io = IO_AUTO, maxPinned = -1;
    /** Bytes; 0 = MemAvailable minus a margin. */
    public long memBudget = 0;
    public boolean mlock = false;

    public Params threads(int n) { nThreads = n; return this; }
    public Params ctx(int n) { nCtx = n; return this; }
    public Params mode(int m) { mode = m; return this; }
    public Params io(int i) { io = i; return this; }
    public Params memBudget(long b) { memBudget = b; return this; }
    /** By name ("resident", "stream", "mmap"; "uring", "pread"): SluiceException EINVAL if unknown. */
    public Params mode(String name) { mode = modeValue(name); return this; }
    public Params io(String name) { io = ioValue(name); return this; }

    public static int modeValue(String name) { return Native.enumValue(Native.MODES, utf8(name)); }
    public static int ioValue(String name) { return Native.enumValue(Native.IOS, utf8(name)); }

    private static byte[] utf8(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }
}
