/* `make android`'s check of libsluice_jni.so on the target (run under qemu-aarch64): the
 * library and its libsluice.so.N load with every symbol bound (RTLD_NOW), and each native
 * that sluice.Native declares (names given as arguments) is exported. A JVM is not needed.
 * Prints "jni load: N natives resolved" or "jni load: FAIL: ..."; exit 1 on failure. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: jni_load LIB NATIVE...\n"); return 2; }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("jni load: FAIL: %s\n", dlerror()); return 1; }
    int bad = 0;
    for (int i = 2; i < argc; i++) {
        char sym[256];
        snprintf(sym, sizeof sym, "Java_sluice_Native_%s", argv[i]);
        if (!dlsym(h, sym)) { printf("jni load: FAIL: %s not exported\n", sym); bad = 1; }
    }
    if (!bad) printf("jni load: %d natives resolved\n", argc - 2);
    dlclose(h);
    return bad;
}
