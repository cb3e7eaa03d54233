package sluice;

/** Telemetry of a session (sl_stats) plus the process's resident memory. */
public final class Stats {
    public final long nPrompt, nDecode, bytesRead, rssBytes, peakRssBytes;
    public final double promptMs, decodeMs, ttftMs, sampleMs, stallMs, computeMs;
    /** Decode tokens per second (0 before the first decode step). */
    public final double tokPerSec, promptTokPerSec;
    /** What the planner chose: "resident", "stream" or "mmap"; backend "uring" or "pread". */
    public final String mode, io;

    Stats(double[] v, String mode, String io) {
        nPrompt = (long) v[0]; promptMs = v[1]; nDecode = (long) v[2]; decodeMs = v[3];
        ttftMs = v[4]; sampleMs = v[5]; stallMs = v[6]; bytesRead = (long) v[7]; computeMs = v[8];
        rssBytes = (long) v[9]; peakRssBytes = (long) v[10];
        tokPerSec = decodeMs > 0 ? nDecode * 1e3 / decodeMs : 0;
        promptTokPerSec = promptMs > 0 ? nPrompt * 1e3 / promptMs : 0;
        this.mode = mode; this.io = io;
    }

    @Override public String toString() {
        return String.format("mode %s, io %s, ttft %.1f ms, %.2f tok/s, stall %.2f ms, read %d B, rss %d B",
                             mode, io, ttftMs, tokPerSec, stallMs, bytesRead, rssBytes);
    }
}
