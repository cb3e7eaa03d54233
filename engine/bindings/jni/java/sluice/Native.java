package sluice;

/** The natives of libsluice_jni.so (engine/bindings/jni/sluice_jni.c). Strings cross as UTF-8
 *  bytes; every failure throws SluiceException. Use Engine and Session instead. */
final class Native {
    private Native() {}

    static {
        // -Dsluice.jni=/path/libsluice_jni.so for a build tree; else java.library.path / the APK.
        String p = System.getProperty("sluice.jni");
        if (p != null && !p.isEmpty()) System.load(p); else System.loadLibrary("sluice_jni");
    }

    static native byte[] version();
    static native long modelOpen(byte[] path, int nThreads, int nCtx, int nBatch, int mode, int io,
                                 long memBudget, int maxPinned, boolean mlock);
    static native void modelClose(long m);
    static native int[] modelInfo(long m);
    static native byte[] modelString(long m, int which);
    /** Enums the library names (which: MODES or IOS; sluice_stream.h's name and parse). */
    static final int MODES = 0, IOS = 1;
    static native byte[] enumName(int which, int value);
    static native int enumValue(int which, byte[] name);
    static native int[] tokenize(long m, byte[] text, boolean addBos, boolean special);
    static native boolean isEog(long m, int tok);
    static native byte[] tokenPiece(long m, int tok);
    static native long sessionCreate(long m);
    static native void sessionDestroy(long s);
    static native void setSampling(long s, float temp, int topK, float topP, float minP,
                                   float repeatPenalty, int repeatLastN, long seed);
    static native void feedText(long s, byte[] text, boolean special);
    static native void feedTokens(long s, int[] ids);
    static native int sample(long s);
    static native void accept(long s, int tok);
    static native byte[] detok(long s, int tok);
    static native int[] position(long s);
    static native void reset(long s);
    static native double[] stats(long s);
    static native void resetStats(long s);
    static native void saveState(long s, byte[] path, boolean load);
    static native void pressure(long s, long floorBytes);
    static native int pressureLevel(long s, int level);
}
