package sluice;

import java.nio.charset.StandardCharsets;

/** One conversation (sl_session): KV cache, sampler. Calls lock the engine (one computing
 *  session per model). After close() every call throws SluiceException (EINVAL). */
public final class Session implements AutoCloseable {
    private final Engine engine;
    private long handle;
    private int lastToken = -1;
    private boolean ended;

    Session(Engine engine, long handle) { this.engine = engine; this.handle = handle; }

    private long h() {
        if (handle == 0) throw new SluiceException(SluiceException.EINVAL, "session is closed");
        return handle;
    }

    public void setSampling(Sampling sp) {
        if (sp == null) throw new SluiceException(SluiceException.EINVAL, "sampling is null");
        synchronized (engine) {
            Native.setSampling(h(), sp.temp, sp.topK, sp.topP, sp.minP, sp.repeatPenalty,
                               sp.repeatLastN, sp.seed);
        }
    }

    /** Tokenize (BOS as the model asks when the session is empty) and feed. */
    public void feed(String text) {
        if (text == null) throw new SluiceException(SluiceException.EINVAL, "text is null");
        synchronized (engine) { Native.feedText(h(), text.getBytes(StandardCharsets.UTF_8), false); }
        ended = false;
    }

    public void feedTokens(int[] ids) {
        synchronized (engine) { Native.feedTokens(h(), ids); }
        ended = false;
    }

    /** Generate one token: its bytes as printed (a UTF-8 sequence split over tokens comes out
     *  whole with its last token, so a step may return an empty array), or null when generation
     *  ended: an end-of-generation token (not fed) or a full context. */
    public byte[] step() {
        synchronized (engine) {
            long s = h();
            if (ended) return null;
            int[] pos = Native.position(s);
            if (pos[0] >= pos[1]) { ended = true; return null; }
            int tok = Native.sample(s);
            if (Native.isEog(engine.handle(), tok)) { ended = true; lastToken = tok; return null; }
            byte[] piece = Native.detok(s, tok);
            Native.accept(s, tok);
            lastToken = tok;
            return piece;
        }
    }

    /** Up to n tokens of text (stops early at the end of generation). */
    public String generate(int n) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < n; i++) {
            byte[] b = step();
            if (b == null) break;
            out.write(b, 0, b.length);
        }
        return new String(out.toByteArray(), StandardCharsets.UTF_8);
    }

    /** The token the last step() sampled (-1 before any). */
    public int lastToken() { return lastToken; }

    /** True once step() returned null (until the next feed or reset). */
    public boolean ended() { return ended; }

    public int nPast() { synchronized (engine) { return Native.position(h())[0]; } }
    public int nCtx() { synchronized (engine) { return Native.position(h())[1]; } }

    public void reset() {
        synchronized (engine) { Native.reset(h()); }
        ended = false;
        lastToken = -1;
    }

    public Stats stats() {
        synchronized (engine) {
            double[] v = Native.stats(h());
            return new Stats(v, engine.mode(), engine.io());
        }
    }

    public void resetStats() { synchronized (engine) { Native.resetStats(h()); } }

    /** Saves tokens, KV cache, logits and sampler state to path (atomically; sl_session_save). */
    public void save(String path) { state(path, false); }

    /** Restores what save wrote; a file of another model, KV type or a damaged one throws
     *  and leaves the session empty (sl_session_load). */
    public void load(String path) {
        state(path, true);
        ended = false;
    }

    private void state(String path, boolean load) {
        if (path == null) throw new SluiceException(SluiceException.EINVAL, "path is null");
        synchronized (engine) { Native.saveState(h(), path.getBytes(StandardCharsets.UTF_8), load); }
    }

    /** Memory-pressure ladder on (below floorBytes available: unpin, fewer slots, KV window) or off (0). */
    public void pressure(long floorBytes) { synchronized (engine) { Native.pressure(h(), floorBytes); } }

    /** Feeds Android's ComponentCallbacks2.onTrimMemory level into the ladder (pressure() first):
     *  RUNNING_MODERATE (5) and UI_HIDDEN (20): half the pinned units; RUNNING_LOW (10) and
     *  BACKGROUND (40): all of them; RUNNING_CRITICAL (15), MODERATE (60), COMPLETE (80): every
     *  rung; anything else lets the ladder climb back. Returns the steps taken. */
    public int trimMemory(int androidLevel) {
        int level;
        switch (androidLevel) {
            case 5: case 20: level = 1; break;
            case 10: case 40: level = 2; break;
            case 15: case 60: case 80: level = 3; break;
            default: level = 0;
        }
        synchronized (engine) { return Native.pressureLevel(h(), level); }
    }

    @Override public void close() {
        synchronized (engine) {
            if (handle == 0) return;
            Native.sessionDestroy(handle);
            handle = 0;
            engine.forget(this);
        }
    }
}
