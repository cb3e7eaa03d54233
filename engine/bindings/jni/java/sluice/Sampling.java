package sluice;

/** Sampling settings (sl_sampling); the defaults are sl_sampling_init's. temp 0 = greedy. */
public final class Sampling {
    public float temp = 0.8f, topP = 0.95f, minP = 0.05f, repeatPenalty = 1.0f;
    public int topK = 40, repeatLastN = 64;
    public long seed = 0;

    public static Sampling greedy() { Sampling s = new Sampling(); s.temp = 0; return s; }
    public Sampling temp(float t) { temp = t; return this; }
    public Sampling seed(long s) { seed = s; return this; }
}
