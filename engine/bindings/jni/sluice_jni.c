/* JNI bridge: the natives of sluice.Native (engine/bindings/jni/java/sluice/)
 * over the public API only (sluice.h, sluice_stream.h). Built as its own
 * libsluice_jni.so linking libsluice; never part of libsluice itself.
 *
 * Handles cross as jlong. Strings cross as UTF-8 byte[] both ways (no
 * modified-UTF-8 conversion, so any path or token bytes survive). Every
 * failure becomes a sluice.SluiceException(status, message bytes) carrying
 * Sluice's message; a 0 handle (closed object) is refused here too, so no
 * call on bad input reaches the library with a dangling pointer. The Java
 * classes serialize calls per model (sluice.h: one computing session per model). */
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_status.h"
#include "sluice.h"
#include "sluice_stream.h"

#define JFN(type, name) JNIEXPORT type JNICALL Java_sluice_Native_##name

/* Throws sluice.SluiceException(status, msg); returns status for chaining. */
static int throw_sl(JNIEnv *env, int status, const char *msg)
{
    if ((*env)->ExceptionCheck(env)) return status;   /* keep the first one */
    jclass cls = (*env)->FindClass(env, "sluice/SluiceException");
    if (!cls) return status;                          /* NoClassDefFoundError pending */
    jmethodID ctor = (*env)->GetMethodID(env, cls, "<init>", "(I[B)V");
    if (!ctor) return status;
    if (!msg || !*msg) msg = sl_strerror(status);
    jsize n = (jsize)strlen(msg);
    jbyteArray b = (*env)->NewByteArray(env, n);
    if (!b) return status;
    (*env)->SetByteArrayRegion(env, b, 0, n, (const jbyte *)msg);
    jobject e = (*env)->NewObject(env, cls, ctor, (jint)status, b);
    if (e) (*env)->Throw(env, (jthrowable)e);
    (*env)->DeleteLocalRef(env, b);
    (*env)->DeleteLocalRef(env, cls);
    return status;
}

/* A NUL-terminated copy of a byte[] (UTF-8 from Java); NULL with an exception pending. */
static char *cstr(JNIEnv *env, jbyteArray a, const char *what)
{
    if (!a) { throw_sl(env, SL_EINVAL, what); return NULL; }
    jsize n = (*env)->GetArrayLength(env, a);
    char *s = malloc((size_t)n + 1);
    if (!s) { throw_sl(env, SL_ENOMEM, "out of memory copying a string"); return NULL; }
    (*env)->GetByteArrayRegion(env, a, 0, n, (jbyte *)s);
    s[n] = 0;
    if (memchr(s, 0, (size_t)n)) {
        free(s);
        throw_sl(env, SL_EINVAL, "string contains a NUL byte");
        return NULL;
    }
    return s;
}

static jbyteArray bytes(JNIEnv *env, const char *p, int n)
{
    jbyteArray b = (*env)->NewByteArray(env, n);
    if (b && n > 0) (*env)->SetByteArrayRegion(env, b, 0, n, (const jbyte *)p);
    return b;
}

static jbyteArray string_bytes(JNIEnv *env, const char *s) { return bytes(env, s, (int)strlen(s)); }

/* The n bytes a call wrote into buf, or its failure n < 0 thrown with msg. */
static jbyteArray piece_bytes(JNIEnv *env, const char *buf, int n, const char *msg)
{
    if (n < 0) { throw_sl(env, n, msg); return NULL; }
    return bytes(env, buf, n);
}

static sl_model *model_of(JNIEnv *env, jlong h)
{
    if (!h) throw_sl(env, SL_EINVAL, "model is closed");
    return (sl_model *)(intptr_t)h;
}

static sl_session *session_of(JNIEnv *env, jlong h)
{
    if (!h) throw_sl(env, SL_EINVAL, "session is closed");
    return (sl_session *)(intptr_t)h;
}

/* sl_model_get_info of handle h; false with the exception pending. */
static bool model_info(JNIEnv *env, jlong h, sl_model_info *mi)
{
    sl_model *m = model_of(env, h);
    if (!m) return false;
    int rc = sl_model_get_info(m, mi);
    if (rc) throw_sl(env, rc, sl_model_errmsg(m));
    return rc == 0;
}

JFN(jbyteArray, version)(JNIEnv *env, jclass c)
{
    (void)c;
    return string_bytes(env, sl_version());
}

JFN(jlong, modelOpen)(JNIEnv *env, jclass c, jbyteArray path, jint n_threads, jint n_ctx, jint n_batch,
               jint mode, jint io, jlong mem_budget, jint max_pinned, jboolean mlock)
{
    (void)c;
    if (mem_budget < 0) { throw_sl(env, SL_EINVAL, "memBudget is negative"); return 0; }
    char *p = cstr(env, path, "model path is null");
    if (!p) return 0;
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_threads = n_threads;
    mp.n_ctx = n_ctx;
    mp.n_batch = n_batch;
    mp.mode = mode;
    mp.io = io;
    mp.mem_budget = (uint64_t)mem_budget;
    mp.max_pinned = max_pinned;
    mp.mlock = mlock;
    sl_model *m = NULL;
    int rc = sl_model_open(&m, p, &mp);
    free(p);
    if (rc) { throw_sl(env, rc, sl_last_error()); return 0; }
    return (jlong)(intptr_t)m;
}

JFN(void, modelClose)(JNIEnv *env, jclass c, jlong h)
{
    (void)env; (void)c;
    sl_model_close((sl_model *)(intptr_t)h);
}

/* {n_layer, n_embd, n_vocab, n_ctx, n_ctx_train, mode, io, n_threads, bos_id, eos_id} */
JFN(jintArray, modelInfo)(JNIEnv *env, jclass c, jlong h)
{
    (void)c;
    sl_model_info mi;
    if (!model_info(env, h, &mi)) return NULL;
    jint v[] = { mi.n_layer, mi.n_embd, mi.n_vocab, mi.n_ctx, mi.n_ctx_train, mi.mode, mi.io,
                 mi.n_threads, mi.bos_id, mi.eos_id };
    jintArray a = (*env)->NewIntArray(env, (jsize)(sizeof v / sizeof v[0]));
    if (a) (*env)->SetIntArrayRegion(env, a, 0, (jsize)(sizeof v / sizeof v[0]), v);
    return a;
}

/* The enums Java names, as the library spells them (Native.MODES, Native.IOS). */
static const struct {
    const char *(*name)(int);
    int (*parse)(const char *, int *);
} enums[] = { { sl_stream_mode_name, sl_stream_mode_parse }, { sl_stream_io_name, sl_stream_io_parse } };
#define N_ENUMS (jint)(sizeof enums / sizeof enums[0])

/* A value's name ("?" for a value the library does not know), as UTF-8 bytes. */
JFN(jbyteArray, enumName)(JNIEnv *env, jclass c, jint which, jint value)
{
    (void)c;
    if (which < 0 || which >= N_ENUMS) { throw_sl(env, SL_EINVAL, "no such enum"); return NULL; }
    return string_bytes(env, enums[which].name(value));
}

/* A name's value; SL_EINVAL for a name the library does not know. */
JFN(jint, enumValue)(JNIEnv *env, jclass c, jint which, jbyteArray name)
{
    (void)c;
    if (which < 0 || which >= N_ENUMS) return throw_sl(env, SL_EINVAL, "no such enum");
    char *s = cstr(env, name, "name is null");
    if (!s) return 0;
    int v = 0, rc = enums[which].parse(s, &v);
    if (rc) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown %s name \"%.100s\"", which ? "io backend" : "mode", s);
        throw_sl(env, rc, msg);
    }
    free(s);
    return v;
}

/* The model's strings ("arch", "isa"), as UTF-8 bytes. */
JFN(jbyteArray, modelString)(JNIEnv *env, jclass c, jlong h, jint which)
{
    (void)c;
    sl_model_info mi;
    if (!model_info(env, h, &mi)) return NULL;
    return string_bytes(env, which == 0 ? mi.arch : mi.isa);
}

JFN(jintArray, tokenize)(JNIEnv *env, jclass c, jlong h, jbyteArray text, jboolean add_bos, jboolean special)
{
    (void)c;
    sl_model *m = model_of(env, h);
    if (!m) return NULL;
    char *t = cstr(env, text, "text is null");
    if (!t) return NULL;
    size_t len = strlen(t);
    const size_t most = 1u << 28;
    jintArray a = NULL;
    int32_t *ids = NULL;
    int n = SL_ERANGE;
    bool oom = false;
    /* a token a byte, else the bound: SPM byte fallback spells a space as
     * U+2581's three byte tokens where the vocabulary lacks it */
    for (int pass = 0; pass < 2 && n == SL_ERANGE; pass++) {
        size_t want = pass ? (len < most / 3 ? 3 * len + 16 : most) : (len < most ? len + 8 : most);
        int32_t *more = realloc(ids, want * sizeof *ids);
        if (!more) { oom = true; break; }
        ids = more;
        n = sl_model_tokenize(m, t, len, add_bos, special, ids, (int)want);
    }
    if (oom) throw_sl(env, SL_ENOMEM, "out of memory for token ids");
    else if (n < 0) throw_sl(env, n, sl_model_errmsg(m));
    else if ((a = (*env)->NewIntArray(env, n)) && n > 0)
        (*env)->SetIntArrayRegion(env, a, 0, n, (const jint *)ids);
    free(ids);
    free(t);
    return a;
}

JFN(jboolean, isEog)(JNIEnv *env, jclass c, jlong h, jint tok)
{
    (void)c;
    sl_model *m = model_of(env, h);
    return m ? sl_model_token_is_eog(m, tok) : JNI_FALSE;
}

JFN(jbyteArray, tokenPiece)(JNIEnv *env, jclass c, jlong h, jint tok)
{
    (void)c;
    sl_model *m = model_of(env, h);
    if (!m) return NULL;
    char buf[1024];
    int n = sl_model_token_piece(m, tok, buf, sizeof buf);
    return piece_bytes(env, buf, n, sl_model_errmsg(m));
}

JFN(jlong, sessionCreate)(JNIEnv *env, jclass c, jlong h)
{
    (void)c;
    sl_model *m = model_of(env, h);
    if (!m) return 0;
    sl_session *s = NULL;
    int rc = sl_session_create(&s, m);
    if (rc) { throw_sl(env, rc, sl_last_error()); return 0; }
    return (jlong)(intptr_t)s;
}

JFN(void, sessionDestroy)(JNIEnv *env, jclass c, jlong h)
{
    (void)env; (void)c;
    sl_session_destroy((sl_session *)(intptr_t)h);
}

JFN(void, setSampling)(JNIEnv *env, jclass c, jlong h, jfloat temp, jint top_k, jfloat top_p, jfloat min_p,
                 jfloat repeat_penalty, jint repeat_last_n, jlong seed)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return;
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = temp;
    sp.top_k = top_k;
    sp.top_p = top_p;
    sp.min_p = min_p;
    sp.repeat_penalty = repeat_penalty;
    sp.repeat_last_n = repeat_last_n;
    sp.seed = (uint64_t)seed;
    int rc = sl_session_set_sampling(s, &sp);
    if (rc) throw_sl(env, rc, sl_session_errmsg(s));
}

JFN(void, feedText)(JNIEnv *env, jclass c, jlong h, jbyteArray text, jboolean special)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return;
    char *t = cstr(env, text, "text is null");
    if (!t) return;
    int rc = sl_session_feed_text(s, t, special);
    free(t);
    if (rc) throw_sl(env, rc, sl_session_errmsg(s));
}

JFN(void, feedTokens)(JNIEnv *env, jclass c, jlong h, jintArray ids)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return;
    if (!ids) { throw_sl(env, SL_EINVAL, "token array is null"); return; }
    jsize n = (*env)->GetArrayLength(env, ids);
    int32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) { throw_sl(env, SL_ENOMEM, "out of memory for token ids"); return; }
    (*env)->GetIntArrayRegion(env, ids, 0, n, (jint *)v);
    int rc = sl_session_feed_tokens(s, v, n);
    free(v);
    if (rc) throw_sl(env, rc, sl_session_errmsg(s));
}

JFN(jint, sample)(JNIEnv *env, jclass c, jlong h)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return -1;
    int32_t tok = -1;
    int rc = sl_session_sample(s, &tok);
    if (rc) throw_sl(env, rc, sl_session_errmsg(s));
    return tok;
}

JFN(void, accept)(JNIEnv *env, jclass c, jlong h, jint tok)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return;
    int rc = sl_session_accept(s, tok);
    if (rc) throw_sl(env, rc, sl_session_errmsg(s));
}

JFN(jbyteArray, detok)(JNIEnv *env, jclass c, jlong h, jint tok)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return NULL;
    char buf[2048];
    int n = sl_session_detok(s, tok, buf, sizeof buf);
    return piece_bytes(env, buf, n, sl_session_errmsg(s));
}

/* {n_past, n_ctx} */
JFN(jintArray, position)(JNIEnv *env, jclass c, jlong h)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return NULL;
    jint v[2] = { sl_session_n_past(s), sl_session_n_ctx(s) };
    jintArray a = (*env)->NewIntArray(env, 2);
    if (a) (*env)->SetIntArrayRegion(env, a, 0, 2, v);
    return a;
}

JFN(void, reset)(JNIEnv *env, jclass c, jlong h)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (s) sl_session_reset(s);
}

/* ---- session state files and the memory-pressure ladder ---- */
JFN(void, saveState)(JNIEnv *env, jclass c, jlong h, jbyteArray path, jboolean load)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return;
    char *p = cstr(env, path, "path is null");
    if (!p) return;
    int rc = load ? sl_session_load(s, p) : sl_session_save(s, p);
    free(p);
    if (rc) throw_sl(env, rc, sl_session_errmsg(s));
}

/* floor_bytes 0: ladder off; else on with the defaults (MemAvailable/PSI watcher). */
JFN(void, pressure)(JNIEnv *env, jclass c, jlong h, jlong floor_bytes)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return;
    if (floor_bytes < 0) { throw_sl(env, SL_EINVAL, "negative pressure floor"); return; }
    sl_pressure_params p;
    sl_pressure_params_init(&p);
    p.floor_bytes = (uint64_t)floor_bytes;
    int rc = sl_session_set_pressure(s, floor_bytes ? &p : NULL);
    if (rc) throw_sl(env, rc, sl_session_errmsg(s));
}

JFN(jint, pressureLevel)(JNIEnv *env, jclass c, jlong h, jint level)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return 0;
    int rc = sl_session_pressure_level(s, level);
    if (rc < 0) throw_sl(env, rc, sl_session_errmsg(s));
    return rc < 0 ? 0 : rc;
}

/* Resident set (VmRSS) and its peak (VmHWM) in bytes; 0 where /proc is missing. */
static void rss(double *cur, double *peak)
{
    *cur = *peak = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return;
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) *cur = (double)kb * 1024;
        else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) *peak = (double)kb * 1024;
    }
    fclose(f);
}

/* {n_prompt, prompt_ms, n_decode, decode_ms, ttft_ms, sample_ms, stall_ms,
 *  bytes_read, compute_ms, rss_bytes, peak_rss_bytes}: the order of sluice.Stats. */
JFN(jdoubleArray, stats)(JNIEnv *env, jclass c, jlong h)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (!s) return NULL;
    sl_stats st;
    int rc = sl_session_get_stats(s, &st);
    if (rc) { throw_sl(env, rc, sl_session_errmsg(s)); return NULL; }
    jdouble v[11] = { (double)st.n_prompt, st.prompt_ms, (double)st.n_decode, st.decode_ms, st.ttft_ms,
                      st.sample_ms, st.stall_ms, (double)st.bytes_read, st.compute_ms, 0, 0 };
    rss(&v[9], &v[10]);
    jdoubleArray a = (*env)->NewDoubleArray(env, 11);
    if (a) (*env)->SetDoubleArrayRegion(env, a, 0, 11, v);
    return a;
}

JFN(void, resetStats)(JNIEnv *env, jclass c, jlong h)
{
    (void)c;
    sl_session *s = session_of(env, h);
    if (s) sl_session_reset_stats(s);
}
