package sluice;

/** Model parameters (sl_model_params); 0 means "the library decides" as in sluice.h. */
public final class Params {
    public static final int MODE_AUTO = 0, MODE_RESIDENT = 1, MODE_STREAM = 2, MODE_MMAP = 3;
    public static final int IO_AUTO = 0, IO_URING = 1, IO_PREAD = 2;
    public int nThreads = 0, nCtx = 0, nBatch = 0, mode = MODE_AUTO, io = IO_AUTO, maxPinned = -1;
    /** Bytes; 0 = MemAvailable minus a margin. */
    public long memBudget = 0;
    public boolean mlock = false;

    public Params threads(int n) { nThreads = n; return this; }
    public Params ctx(int n) { nCtx = n; return this; }
    public Params mode(int m) { mode = m; return this; }
    public Params io(int i) { io = i; return this; }
    public Params memBudget(long b) { memBudget = b; return this; }
}
