package sluice;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** An open model (sl_model): weights through the streamer, tokenizer, thread pool.
 *  Calls are serialized on this object (sluice.h: at most one session of a model computes at a
 *  time), so sessions may be used from any thread. close() closes its sessions first. */
public final class Engine implements AutoCloseable {
    private long handle;
    private final List<Session> sessions = new ArrayList<>();

    private Engine(long handle) { this.handle = handle; }

    /** The library version at run time ("0.3.0"). */
    public static String version() { return utf8(Native.version()); }

    public static Engine open(String path, Params p) {
        if (path == null) throw new SluiceException(SluiceException.EINVAL, "model path is null");
        if (p == null) p = new Params();
        return new Engine(Native.modelOpen(path.getBytes(StandardCharsets.UTF_8), p.nThreads, p.nCtx,
                                           p.nBatch, p.mode, p.io, p.memBudget, p.maxPinned, p.mlock));
    }

    synchronized long handle() {
        if (handle == 0) throw new SluiceException(SluiceException.EINVAL, "engine is closed");
        return handle;
    }

    public synchronized Session createSession() {
        Session s = new Session(this, Native.sessionCreate(handle()));
        sessions.add(s);
        return s;
    }

    /** A session with the prompt fed (tokenized; BOS as the model asks) and these settings. */
    public Session createSession(String prompt, Sampling sampling) {
        Session s = createSession();
        try {
            if (sampling != null) s.setSampling(sampling);
            if (prompt != null) s.feed(prompt);
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
        return s;
    }

    synchronized void forget(Session s) { sessions.remove(s); }

    public synchronized int[] tokenize(String text, boolean addBos, boolean parseSpecial) {
        if (text == null) throw new SluiceException(SluiceException.EINVAL, "text is null");
        return Native.tokenize(handle(), text.getBytes(StandardCharsets.UTF_8), addBos, parseSpecial);
    }

    /** Token ids of text as bytes (as read from a file: need not be valid UTF-8; invalid bytes
     *  are tokenized as llama.cpp does). There may be more ids than bytes. */
    public synchronized int[] tokenize(byte[] text, boolean addBos, boolean parseSpecial) {
        if (text == null) throw new SluiceException(SluiceException.EINVAL, "text is null");
        return Native.tokenize(handle(), text, addBos, parseSpecial);
    }

    /** The bytes a token stands for (not necessarily valid UTF-8 alone). */
    public synchronized byte[] tokenBytes(int token) { return Native.tokenPiece(handle(), token); }

    public synchronized boolean isEndOfGeneration(int token) { return Native.isEog(handle(), token); }

    private int info(int i) { return Native.modelInfo(handle())[i]; }
    public synchronized int nLayer() { return info(0); }
    public synchronized int nEmbd() { return info(1); }
    public synchronized int nVocab() { return info(2); }
    public synchronized int nCtx() { return info(3); }
    /** The plan's mode ("resident", "stream", "mmap") and backend ("uring", "pread"). */
    public synchronized String mode() { return utf8(Native.enumName(Native.MODES, info(5))); }
    public synchronized String io() { return utf8(Native.enumName(Native.IOS, info(6))); }
    public synchronized String arch() { return utf8(Native.modelString(handle(), 0)); }
    public synchronized String isa() { return utf8(Native.modelString(handle(), 1)); }

    @Override public synchronized void close() {
        if (handle == 0) return;
        for (Session s : new ArrayList<>(sessions)) s.close();
        Native.modelClose(handle);
        handle = 0;
    }

    static String utf8(byte[] b) { return new String(b, StandardCharsets.UTF_8); }
}
