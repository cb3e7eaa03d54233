// The JNI binding on the host JVM (make check): generation equal to `sluice run` token for
// token (greedy and seeded sampling, resident and streamed under a 2 MiB budget), telemetry,
// and every kind of bad input ending in a SluiceException with Sluice's message, not a crash.
// usage: java -Dsluice.jni=build/libsluice_jni.so -cp CLASSES JniTest MODEL SLUICE_BIN
// Ends with "jni: N passed, M failed"; exit status 1 on any failure.
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import sluice.Engine;
import sluice.Params;
import sluice.Sampling;
import sluice.Session;
import sluice.SluiceException;
import sluice.Stats;

public class JniTest {
    static int passed, failed;
    static String model, cli;

    static void check(boolean ok, String what) {
        if (ok) passed++;
        else { failed++; System.out.println("FAIL: " + what); }
    }

    interface Body { void run() throws Exception; }

    static void test(String name, Body b) {
        int f0 = failed;
        try { b.run(); }
        catch (Throwable t) { failed++; System.out.println("FAIL: " + name + ": " + t); }
        System.out.println((failed == f0 ? "ok   " : "FAIL ") + name);
    }

    /** Expects body to throw SluiceException with this status and a message containing part. */
    static void throwsSl(String what, int status, String part, Body b) {
        try {
            b.run();
            check(false, what + ": no exception");
        } catch (SluiceException e) {
            check(e.status() == status, what + ": status " + e.status() + " (want " + status + "): " + e.getMessage());
            check(e.getMessage() != null && e.getMessage().contains(part),
                  what + ": message '" + e.getMessage() + "' lacks '" + part + "'");
        } catch (Throwable t) {
            check(false, what + ": threw " + t);
        }
    }

    /** `sluice run` output: {generated text, decode token count}. */
    static String[] runCli(List<String> flags) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(cli, "run", "-m", model, "--no-display-prompt", "--stats"));
        cmd.addAll(flags);
        Process p = new ProcessBuilder(cmd).start();
        byte[] out = readAll(p.getInputStream()), err = readAll(p.getErrorStream());
        int rc = p.waitFor();
        String e = new String(err, StandardCharsets.UTF_8);
        if (rc != 0) throw new RuntimeException("sluice run failed: " + e);
        String o = new String(out, StandardCharsets.UTF_8);
        if (o.endsWith("\n")) o = o.substring(0, o.length() - 1);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("decode: (\\d+) tokens").matcher(e);
        if (!m.find()) throw new RuntimeException("no decode count in: " + e);
        return new String[] { o, m.group(1) };
    }

    static byte[] readAll(InputStream in) throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        in.transferTo(b);
        return b.toByteArray();
    }

    static final String PROMPT = "Once upon a time";

    /** Generates n tokens through the binding and compares with the CLI under the same flags. */
    static void identity(String what, Params p, Sampling sp, List<String> flags, int n) throws Exception {
        String[] want = runCli(flags);
        try (Engine e = Engine.open(model, p); Session s = e.createSession(PROMPT, sp)) {
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            int steps = 0;
            for (int i = 0; i < n; i++) {
                byte[] b = s.step();
                if (b == null) break;
                got.write(b, 0, b.length);
                steps++;
            }
            String text = new String(got.toByteArray(), StandardCharsets.UTF_8);
            check(text.equals(want[0]), what + ": text differs from sluice run:\n  jni: " + text + "\n  cli: " + want[0]);
            check(Integer.toString(steps).equals(want[1]), what + ": " + steps + " tokens, sluice run " + want[1]);
            check(steps > 8, what + ": only " + steps + " tokens generated");
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) { System.out.println("usage: JniTest MODEL SLUICE_BIN"); System.exit(2); }
        model = args[0];
        cli = args[1];

        test("version", () -> check(Engine.version().matches("\\d+\\.\\d+\\.\\d+"), "version " + Engine.version()));

        test("greedy generation equals sluice run", () ->
            identity("greedy", new Params().ctx(256).threads(1), Sampling.greedy(),
                     List.of("-p", PROMPT, "-n", "48", "-c", "256", "-t", "1", "--temp", "0"), 48));

        test("seeded sampling equals sluice run", () ->
            identity("seed 42", new Params().ctx(256).threads(2), new Sampling().temp(0.8f).seed(42),
                     List.of("-p", PROMPT, "-n", "48", "-c", "256", "-t", "2", "--temp", "0.8", "--seed", "42"), 48));

        test("stream mode under a 2 MiB budget equals sluice run; stats", () -> {
            Params p = new Params().ctx(256).mode(Params.MODE_STREAM).memBudget(2L << 20);
            identity("stream 2M", p, new Sampling().seed(7),
                     List.of("-p", PROMPT, "-n", "32", "-c", "256", "--mode", "stream", "--mem-budget", "2M",
                             "--seed", "7"), 32);
            try (Engine e = Engine.open(model, p); Session s = e.createSession(PROMPT, Sampling.greedy())) {
                check(e.mode().equals("stream"), "mode " + e.mode());
                check(e.nLayer() == 5 && e.nVocab() == 512 && e.nCtx() == 256 && e.arch().equals("llama"),
                      "info: layers " + e.nLayer() + " vocab " + e.nVocab() + " ctx " + e.nCtx());
                String text = s.generate(16);
                check(!text.isEmpty(), "no text");
                Stats st = s.stats();
                check(st.mode.equals("stream") && (st.io.equals("uring") || st.io.equals("pread")), "stats mode/io " + st);
                check(st.nDecode == 16 && st.nPrompt > 0, "counts " + st.nPrompt + "/" + st.nDecode);
                check(st.ttftMs > 0 && st.tokPerSec > 0, "ttft/tok/s " + st);
                check(st.bytesRead > 16L * 1000000 / 2, "streamed bytes " + st.bytesRead);   // ~1 MiB per token
                check(st.rssBytes > 0 && st.peakRssBytes >= st.rssBytes, "rss " + st.rssBytes + " peak " + st.peakRssBytes);
                check(st.stallMs >= 0 && st.computeMs > 0, "stall/compute " + st);
            }
        });

        test("tokenize and token bytes", () -> {
            try (Engine e = Engine.open(model, new Params().ctx(64))) {
                int[] ids = e.tokenize(PROMPT, true, false);
                check(ids.length > 2 && ids[0] == 1, "ids " + java.util.Arrays.toString(ids));
                StringBuilder sb = new StringBuilder();
                for (int i = 1; i < ids.length; i++) sb.append(new String(e.tokenBytes(ids[i]), StandardCharsets.UTF_8));
                check(sb.toString().trim().equals(PROMPT), "pieces give '" + sb + "'");
                check(e.isEndOfGeneration(2) && !e.isEndOfGeneration(ids[1]), "eog");
                // more tokens than bytes: SPM byte fallback spells the U+2581 after an invalid byte
                // as its three byte tokens, so the first buffer (a token a byte) is too small
                byte[] many = new byte[24];
                for (int i = 0; i < many.length; i += 2) { many[i] = ' '; many[i + 1] = (byte) 0xe9; }
                int[] more = e.tokenize(many, false, false);
                check(more.length > many.length + 8, more.length + " tokens for " + many.length + " bytes");
                check(more[0] == e.tokenize(" ", false, false)[0] && more[more.length - 1] == 236,
                      "ids " + java.util.Arrays.toString(more));   // 236: <0xE9>
            }
        });

        test("errors: wrong path, bad params", () -> {
            throwsSl("missing file", SluiceException.ENOENT, "/nonexistent/x.gguf",
                     () -> Engine.open("/nonexistent/x.gguf", new Params()));
            throwsSl("not a GGUF", SluiceException.EFORMAT, cli, () -> Engine.open(cli, new Params()));
            throwsSl("null path", SluiceException.EINVAL, "null", () -> Engine.open(null, null));
            throwsSl("negative n_ctx", SluiceException.EINVAL, "", () -> Engine.open(model, new Params().ctx(-5)));
            throwsSl("bad mode", SluiceException.EINVAL, "", () -> Engine.open(model, new Params().mode(99)));
            throwsSl("negative budget", SluiceException.EINVAL, "memBudget",
                     () -> Engine.open(model, new Params().memBudget(-1)));
        });

        test("errors: bad input to a session", () -> {
            Engine e = Engine.open(model, new Params().ctx(16));
            try {
                Session s = e.createSession();
                throwsSl("token outside vocab", SluiceException.EINVAL, "", () -> s.feedTokens(new int[] { 1, 100000 }));
                throwsSl("null tokens", SluiceException.EINVAL, "null", () -> s.feedTokens(null));
                Sampling bad = new Sampling();
                bad.topP = -3;
                throwsSl("bad top-p", SluiceException.EINVAL, "", () -> s.setSampling(bad));
                throwsSl("bad token bytes", SluiceException.EINVAL, "", () -> e.tokenBytes(-4));
                int[] many = new int[17];
                java.util.Arrays.fill(many, 5);
                throwsSl("prompt longer than the context", SluiceException.ECTX, "", () -> s.feedTokens(many));
                check(s.nPast() == 0, "nothing fed after ECTX: n_past " + s.nPast());
                s.feed(PROMPT);
                s.setSampling(Sampling.greedy());
                int n = 0;
                while (s.step() != null) n++;
                check(s.nPast() == 16 || e.isEndOfGeneration(s.lastToken()), "stopped at n_past " + s.nPast());
                check(s.step() == null && s.ended(), "step after the end");
                check(n > 0, "no tokens before the context filled");
                s.close();
                s.close();   // twice is fine
                throwsSl("step on a closed session", SluiceException.EINVAL, "closed", s::step);
                throwsSl("stats on a closed session", SluiceException.EINVAL, "closed", s::stats);
                Session s2 = e.createSession(PROMPT, Sampling.greedy());
                e.close();
                throwsSl("session of a closed engine", SluiceException.EINVAL, "closed", s2::step);
                throwsSl("closed engine", SluiceException.EINVAL, "closed", e::createSession);
                throwsSl("closed engine tokenize", SluiceException.EINVAL, "closed", () -> e.tokenize("x", false, false));
            } finally {
                e.close();
            }
        });

        System.out.println("jni: " + passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
