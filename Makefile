# Sluice — top-level Makefile (no cmake). Out-of-tree builds:
#   build/                 host build        build-asan/   ASan+UBSan build
#   build-<cross>/         cross build       build-fuzz/   libFuzzer targets
# Source layout rules (so new files need no Makefile edit):
#   gguf/ gguf/base/ quant/ kernels/ io/ engine/ engine/tok/ engine/arch/ *.c -> libsluice.{a,so}
#   *_avx2.c *_avx512.c *_avx512vnni.c      -> x86 only, own -m flags
#   *_neon.c *_dotprod.c                   -> aarch64 only
#   engine/cli/*.c perf/*.c                -> the `sluice` command (perf/bin_X.c -> build/X)
#   io/examples/*.c                        -> build/examples/* (use only io/sluice_stream.h)
#   tests/test_*.c                         -> one Criterion binary each; a file that
#                                             contains SL_HOST_ONLY is not cross-built
#   engine/bindings/jni/*.c                -> libsluice_jni.so (links libsluice; not in it)
#   engine/bindings/jni/java/sluice/*.java -> sluice.jar; Python (ctypes): pip install engine/bindings/python
#   engine/cli/ring/*.c                    -> the `sluice` binary, host builds with GLPK only
#                                             (ring_mpi_*.c: and Open MPI)
#                                             (its own block below; tests/ring/ likewise)

CROSS   ?=
CC      ?= cc
ifneq ($(CROSS),)
CC      := $(CROSS)gcc
AR      := $(CROSS)ar
BUILD   ?= build-$(patsubst %-,%,$(CROSS))
else
BUILD   ?= build
endif
SHARED  ?= $(abspath $(CURDIR)/../shared)
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
# One source for the version: gguf/base/sl_api.h (SLUICE_VERSION_*); MAJOR is the SONAME.
sl_ver   = $(shell sed -n 's/^\#define SLUICE_VERSION_$(1) *\([0-9][0-9]*\).*/\1/p' gguf/base/sl_api.h)
SOMAJOR := $(call sl_ver,MAJOR)
VERSION := $(SOMAJOR).$(call sl_ver,MINOR).$(call sl_ver,PATCH)

SL_ARCH := $(shell $(CC) -dumpmachine 2>/dev/null | cut -d- -f1)
IS_X86  := $(filter x86_64 i686 i386,$(SL_ARCH))
IS_ARM  := $(filter aarch64 arm64,$(SL_ARCH))

OPT     ?= -O2
# -fvisibility=hidden: libsluice.so exports only what the public headers mark SL_API.
# -Igguf/base: the public headers include "sl_api.h" by bare name (installed side by side).
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -Werror -fPIC \
               -fvisibility=hidden -Igguf/base \
               -ffp-contract=off -pthread -MMD -MP -DSL_SHARED_DIR='"$(SHARED)"'
CFLAGS  ?=
ALL_CFLAGS = $(CFLAGS_BASE) $(SAN) $(CFLAGS)
LDLIBS  := -lm -pthread

# liburing: host builds use it when present; cross builds fall back to pread.
ifeq ($(CROSS),)
ifneq ($(wildcard /usr/include/liburing.h),)
ALL_CFLAGS += -DSL_HAVE_LIBURING=1
LDLIBS  += -luring
else
$(warning *** liburing-dev is not installed: this build streams through the pread pool, not io_uring ***)
$(warning *** (make deps installs it; then make clean && make) ***)
endif
endif

# libnuma (io/stream_numa.c, --numa): host builds where the header is; else placement is a no-op.
ifeq ($(CROSS),)
ifneq ($(wildcard /usr/include/numa.h),)
ALL_CFLAGS += -DSL_HAVE_LIBNUMA=1
LDLIBS  += -lnuma
endif
endif

LIB_DIRS := gguf gguf/base quant kernels io engine engine/tok engine/arch
LIB_SRCS := $(wildcard $(addsuffix /*.c,$(LIB_DIRS)))
ifneq ($(IS_X86),)
LIB_SRCS := $(filter-out %_neon.c %_dotprod.c,$(LIB_SRCS))
else
LIB_SRCS := $(filter-out %_avx2.c %_avx512.c %_avx512vnni.c %_avx512vbmi.c,$(LIB_SRCS))
endif
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)

CLI_SRCS := $(wildcard engine/cli/*.c) $(filter-out perf/bin_%.c,$(wildcard perf/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)

# ---- sluice serve (engine/cli/serve/*.c): libmicrohttpd + cJSON, linked into the command only ----
# Host builds where both headers are installed (make deps); elsewhere `sluice serve` says so.
ifeq ($(CROSS),)
ifeq ($(words $(wildcard /usr/include/microhttpd.h /usr/include/cjson/cJSON.h)),2)
SERVE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard engine/cli/serve/*.c))
CLI_OBJS += $(SERVE_OBJS)
$(BUILD)/sluice: LDLIBS += -lmicrohttpd -lcjson
$(BUILD)/obj/engine/cli/cli_serve.o: ALL_CFLAGS += -DSL_HAVE_SERVE=1
endif
endif
PERF_BINS := $(patsubst perf/bin_%.c,$(BUILD)/%,$(wildcard perf/bin_*.c))
EXAMPLES := $(patsubst io/examples/%.c,$(BUILD)/examples/%,$(wildcard io/examples/*.c))

TEST_SRCS := $(wildcard tests/test_*.c)
PORT_TEST_SRCS := $(shell grep -L SL_HOST_ONLY $(TEST_SRCS) /dev/null 2>/dev/null | grep -v /dev/null)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
PORT_TEST_BINS := $(PORT_TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_SUPPORT := $(filter-out tests/test_% tests/fuzz_% tests/mini_runner.c,$(wildcard tests/*.c))

# Installed under include/sluice/ (flat); everything else is library-internal.
PUBLIC_HEADERS := engine/sluice.h io/sluice_stream.h gguf/gguf.h gguf/gguf_type.h gguf/base/sl_status.h gguf/base/sl_api.h

STATIC_LIB := $(BUILD)/libsluice.a
SHARED_LIB := $(BUILD)/libsluice.so.$(VERSION)

.SECONDARY:
.PHONY: all lib bindings android test check asan check-aarch64 fuzz fuzz-smoke fuzz-campaign fuzz-run deps deps-node demo install clean tests bench

all: $(STATIC_LIB) $(SHARED_LIB) $(BUILD)/sluice $(PERF_BINS) $(EXAMPLES)

lib: $(STATIC_LIB) $(SHARED_LIB)

# Per-ISA flags.
$(BUILD)/obj/%_avx2.o: ISAFLAGS = -mavx2 -mfma -mf16c -mbmi2
$(BUILD)/obj/%_avx512.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma -mf16c -mbmi2
$(BUILD)/obj/%_avx512vnni.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni -mavx2 -mfma -mf16c -mbmi2
$(BUILD)/obj/%_avx512vbmi.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni -mavx512vbmi -mgfni -mavx2 -mfma -mf16c -mbmi2
$(BUILD)/obj/%_dotprod.o: ISAFLAGS = -march=armv8.2-a+dotprod

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ISAFLAGS) -c $< -o $@

$(STATIC_LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(SHARED_LIB): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libsluice.so.$(SOMAJOR) $(SAN) -o $@ $^ $(LDLIBS)
	ln -sf libsluice.so.$(VERSION) $(BUILD)/libsluice.so.$(SOMAJOR)
	ln -sf libsluice.so.$(SOMAJOR) $(BUILD)/libsluice.so

# EXE_LDFLAGS=-static: `make android`'s loader-free binary.
$(BUILD)/sluice: $(CLI_OBJS) $(STATIC_LIB)
	$(CC) $(SAN) $(EXE_LDFLAGS) -o $@ $(CLI_OBJS) $(STATIC_LIB) $(LDLIBS)

# Standalone perf tools link only the helpers that register no `sluice` subcommand
# (the other perf/*.c need engine/cli/cli_main.c's table and main).
$(BUILD)/%: $(BUILD)/obj/perf/bin_%.o $(BUILD)/obj/perf/perf_util.o $(BUILD)/obj/engine/cli/cli_size.o $(STATIC_LIB)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

# Examples include the public headers by bare name, as an installed program does.
$(BUILD)/obj/io/examples/%.o: ALL_CFLAGS += -Iio
$(BUILD)/examples/%: $(BUILD)/obj/io/examples/%.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

# ---- bindings (engine/bindings/): JNI bridge + Java API; Python is ctypes, no build ----
# jni.h of the JDK javac belongs to (Debian: default-jdk-headless); jni_md.h is the same on aarch64.
JAVAC   ?= javac
JAVA    ?= java
JAR     ?= jar
PYTHON  ?= $(firstword $(wildcard /usr/bin/python3) python3)
JAVA_HOME ?= $(patsubst %/bin/javac,%,$(realpath $(shell command -v $(JAVAC) 2>/dev/null)))
JNI_LIB := $(BUILD)/libsluice_jni.so
JNI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard engine/bindings/jni/*.c))
JAVA_SRCS := $(wildcard engine/bindings/jni/java/sluice/*.java)

$(BUILD)/obj/engine/bindings/jni/%.o: ALL_CFLAGS += -Iengine -Iio -I$(JAVA_HOME)/include -I$(JAVA_HOME)/include/linux
$(JNI_LIB): $(JNI_OBJS) $(SHARED_LIB)
	$(CC) -shared $(SAN) -o $@ $(JNI_OBJS) -L$(BUILD) -l:libsluice.so.$(SOMAJOR) -Wl,-rpath,'$$ORIGIN' $(LDLIBS)

# Java 8 class files: what Android's D8 and Kotlin take.
$(BUILD)/sluice.jar: $(JAVA_SRCS)
	@rm -rf $(BUILD)/java/api && mkdir -p $(BUILD)/java/api
	$(JAVAC) -Xlint:all -Werror --release 8 -d $(BUILD)/java/api $(JAVA_SRCS)
	$(JAR) cf $@ -C $(BUILD)/java/api .

$(BUILD)/java/test/JniTest.class: tests/bind/JniTest.java $(BUILD)/sluice.jar
	@mkdir -p $(dir $@)
	$(JAVAC) -Xlint:all -Werror -cp $(BUILD)/sluice.jar -d $(dir $@) $<

bindings: $(JNI_LIB) $(BUILD)/sluice.jar

# ---- tests --------------------------------------------------------------
TEST_SUPPORT_OBJS := $(TEST_SUPPORT:%.c=$(BUILD)/obj/%.o)
ifeq ($(CROSS),)
$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_SUPPORT_OBJS) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ -lcriterion $(LDLIBS)
else
# Cross: the same test sources against the minimal runner, linked static for qemu.
$(BUILD)/obj/tests/%.o: ALL_CFLAGS += -DSL_MINI_TEST
$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(BUILD)/obj/tests/mini_runner.o $(TEST_SUPPORT_OBJS) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) -static -o $@ $^ $(LDLIBS)
endif

tests: $(TEST_BINS)

# `make test` installs what is missing first (quiet when all is there).
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all tests
	@$(MAKE) --no-print-directory check

# Last: what `make install` gives an embedder (tests/install_check.sh).
check: all $(TEST_BINS) bindings $(BUILD)/java/test/JniTest.class
	@fail=0; for t in $(TEST_BINS); do \
	  echo "== $$t"; $$t --jobs $(JOBS) || { fail=1; echo "FAILED: $$t"; }; \
	done; \
	BUILD=$(BUILD) SAN="$(SAN)" CC="$(CC)" SHARED="$(SHARED)" JAVA="$(JAVA)" PYTHON="$(PYTHON)" \
	  sh tests/bind/check.sh || fail=1; \
	echo "== tests/serve/run.sh"; BUILD=$(BUILD) SHARED="$(SHARED)" sh tests/serve/run.sh || fail=1; \
	echo "== tests/progress_check.sh"; BUILD=$(BUILD) SHARED="$(SHARED)" sh tests/progress_check.sh || fail=1; \
	echo "== tests/perf_compare_check.sh"; sh tests/perf_compare_check.sh || fail=1; \
	echo "== tests/perf_moe_check.sh"; BUILD=$(BUILD) SHARED="$(SHARED)" sh tests/perf_moe_check.sh || fail=1; \
	echo "== tests/install_check.sh"; \
	MAKE="$(MAKE)" CC="$(CC)" SAN="$(SAN)" SHARED="$(SHARED)" sh tests/install_check.sh || fail=1; \
	exit $$fail

ASAN_MAKE = $(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
asan: deps
	@$(ASAN_MAKE) -j$(JOBS) all tests
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp $(ASAN_MAKE) check

QEMU_CPUS ?= cortex-a53 cortex-a76 max
check-aarch64: deps
	@$(MAKE) --no-print-directory -j$(JOBS) CROSS=aarch64-linux-gnu- tests-cross
	@total_p=0; total_f=0; \
	for t in $(PORT_TEST_SRCS:tests/%.c=build-aarch64-linux-gnu/tests/%); do \
	  case $$t in *test_kern*) cpus="$(QEMU_CPUS)";; *) cpus=max;; esac; \
	  for c in $$cpus; do \
	    echo "== qemu-aarch64 -cpu $$c $$t"; \
	    out=$$(qemu-aarch64 -cpu $$c $$t 2>&1); rc=$$?; echo "$$out" | tail -n 20; \
	    line=$$(echo "$$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n1); \
	    p=$$(echo "$$line" | awk '{print $$1}'); f=$$(echo "$$line" | awk '{print $$3}'); \
	    [ -n "$$p" ] || { p=0; f=1; }; [ $$rc -eq 0 ] || [ "$$f" != 0 ] || f=1; \
	    total_p=$$((total_p+p)); total_f=$$((total_f+f)); \
	  done; \
	done; \
	echo "aarch64: $$total_p passed, $$total_f failed"; [ $$total_f -eq 0 ]

tests-cross: $(STATIC_LIB) $(PORT_TEST_BINS) $(BUILD)/sluice

# ---- Android (aarch64): a static `sluice` (runs from adb shell / Termux, no loader) and
# libsluice_jni.so (+ libsluice.so.N it links), both checked under qemu-aarch64, where
# the pread pool runs (no liburing in the cross build). The glibc toolchain's .so files load
# on aarch64 Linux, not in Bionic apps (an APK needs the NDK: README "Android").
ANDROID_CROSS ?= aarch64-linux-gnu-
ANDROID_BUILD ?= build-android
ANDROID_SYSROOT ?= /usr/aarch64-linux-gnu
JNI_NATIVES = $(shell grep -ho 'static native [^ ]* [a-zA-Z]*' $(JAVA_SRCS) | awk '{print $$4}')
android: deps
	@$(MAKE) --no-print-directory -j$(JOBS) CROSS=$(ANDROID_CROSS) BUILD=$(ANDROID_BUILD) \
	  EXE_LDFLAGS=-static $(ANDROID_BUILD)/sluice $(ANDROID_BUILD)/libsluice_jni.so
	$(ANDROID_CROSS)gcc -std=c11 -Wall -Wextra -Werror -o $(ANDROID_BUILD)/jni_load tests/bind/jni_load.c -ldl
	@fail=0; \
	echo "== $(ANDROID_BUILD)/sluice"; file $(ANDROID_BUILD)/sluice | grep -q 'statically linked' || \
	  { echo "android: FAIL: sluice is not statically linked"; fail=1; }; \
	out=$$(qemu-aarch64 $(ANDROID_BUILD)/sluice run -m $(DEMO_MODEL) -p "Once upon a time" -n 24 \
	  --temp 0 -c 128 --mode stream --mem-budget 2M --stats --no-display-prompt 2>&1); echo "$$out"; \
	echo "$$out" | grep -q 'mode stream, io pread' || { echo "android: FAIL: sluice run (stream, pread)"; fail=1; }; \
	echo "$$out" | grep -q 'decode: 24 tokens' || { echo "android: FAIL: sluice run did not generate 24 tokens"; fail=1; }; \
	echo "== $(ANDROID_BUILD)/libsluice_jni.so"; \
	qemu-aarch64 -L $(ANDROID_SYSROOT) $(ANDROID_BUILD)/jni_load $(ANDROID_BUILD)/libsluice_jni.so $(JNI_NATIVES) || fail=1; \
	[ $$fail -eq 0 ] && echo "android: PASS" || { echo "android: FAIL"; exit 1; }

# ---- fuzzing ------------------------------------------------------------
# libFuzzer targets, one per parser: tests/fuzz_<x>.c -> build-fuzz/fuzz_<x>. The parser's own
# files (FUZZ_SRCS_<x>) are compiled into the target with the fuzzer's coverage and ASan+UBSan;
# the rest of the library comes from this build's libsluice.a (fuzz_gguf: the reader alone).
FUZZ_CC = clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -Igguf/base -DSL_SHARED_DIR='"$(SHARED)"' -DSL_ARENA_CHUNK=8192 \
	  $(filter -DSL_HAVE_%,$(ALL_CFLAGS))
FUZZ_NAMES := $(patsubst tests/fuzz_%.c,%,$(wildcard tests/fuzz_*.c))
FUZZ_BINS := $(FUZZ_NAMES:%=build-fuzz/fuzz_%)
FUZZ_SRCS_gguf := $(sort $(wildcard gguf/*.c gguf/base/*.c))
FUZZ_SRCS_serve_req := engine/cli/serve/serve_req.c engine/chat_tmpl.c
FUZZ_SRCS_chat := engine/chat_tmpl.c
FUZZ_SRCS_tok := $(sort $(wildcard engine/tok/*.c))
FUZZ_SRCS_prompt_cache := engine/session_state.c engine/hash64.c
FUZZ_SRCS_model_desc := engine/model.c engine/model_rope.c $(sort $(wildcard engine/arch/*.c gguf/*.c))
FUZZ_SRCS_ring_cluster := engine/cli/ring/ring_json.c engine/cli/ring/ring_cluster.c
FUZZ_LIBS_serve_req := -lcjson
fuzz: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(STATIC_LIB)
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
build-fuzz/fuzz_gguf: tests/fuzz_gguf.c $(FUZZ_SRCS_gguf) $(wildcard gguf/*.h gguf/base/*.h)
	@mkdir -p build-fuzz
	$(FUZZ_CC) -o $@ $< $(FUZZ_SRCS_gguf)
.SECONDEXPANSION:
build-fuzz/fuzz_%: tests/fuzz_%.c $$(FUZZ_SRCS_$$*) $(STATIC_LIB)
	@mkdir -p build-fuzz
	$(FUZZ_CC) -o $@ $< $(FUZZ_SRCS_$*) $(STATIC_LIB) $(FUZZ_LIBS_$*) $(LDLIBS)

# A target's corpus: what earlier runs kept (a campaign resumes), its seeds, and for those that
# read GGUF the models' heads: the reader gets the first FUZZ_MAXLEN_gguf bytes of each file
# (vocabularies: string arrays) and both get each model's header and tensor table without its
# vocabulary (tests/fuzz/gguf_head.py: a few KiB, where a 64 KiB head was mostly tokenizer strings
# the description loader never reads).
FUZZ_GGUF_SEEDED := gguf model_desc
FUZZ_MAXLEN_gguf := 16384
FUZZ_MAXLEN_tok := 8192
fuzz_maxlen = $(or $(FUZZ_MAXLEN_$(1)),65536)
define fuzz_corpus
	mkdir -p build-fuzz/corpus-$(1); \
	  [ ! -d tests/fuzz/$(1) ] || cp tests/fuzz/$(1)/* build-fuzz/corpus-$(1)/; \
	  case " $(FUZZ_GGUF_SEEDED) " in *" $(1) "*) for f in $(SHARED)/models/*.gguf $(SHARED)/models/vocab/*.gguf; do \
	    [ -f "$$f" ] || continue; \
	    [ $(1) != gguf ] || head -c $(FUZZ_MAXLEN_gguf) "$$f" > build-fuzz/corpus-$(1)/$$(basename $$f); \
	    $(PYTHON) tests/fuzz/gguf_head.py "$$f" build-fuzz/corpus-$(1)/head-$$(basename $$f); done;; esac; true
endef
# Runs every target (or those of FUZZ_TARGETS) for its share of FUZZ_SECONDS (CI: 60 s in all);
# the GGUF reader gets twice a share. FUZZ_RUNS caps each target at that many executions.
# Prints each target's executions; fails on the first crash (the input is build-fuzz/crash-* /
# leak-* / timeout-*).
FUZZ_SECONDS ?= 60
FUZZ_CAMPAIGN_SECONDS ?= 3600
# libFuzzer's per-input limit, in wall-clock seconds: a campaign run at low priority beside other
# work needs more (model_desc's slowest inputs, a few hundred bytes whose array of empty strings
# fills the 32 MiB virtual file, take ~2 s alone under ASan and coverage).
FUZZ_TIMEOUT ?= 10
FUZZ_TARGETS ?= $(FUZZ_NAMES)
fuzz-smoke: fuzz
	@$(MAKE) --no-print-directory fuzz-run FUZZ_EACH=$$(( $(FUZZ_SECONDS) / ($(words $(FUZZ_NAMES)) + 1) ))
# Each target for FUZZ_CAMPAIGN_SECONDS or FUZZ_CAMPAIGN_RUNS executions (10000000: the issue's
# 10 M), whichever comes first; the counts and rates also go to perf/results.
fuzz-campaign: fuzz
	@$(MAKE) --no-print-directory fuzz-run FUZZ_EACH=$(FUZZ_CAMPAIGN_SECONDS) FUZZ_RUNS=$(FUZZ_CAMPAIGN_RUNS) \
	  FUZZ_REPORT=perf/results/$(shell date -u +%F)-fuzz-campaign.txt
fuzz-run:
	@rc=0; : > build-fuzz/execs.txt; for t in $(FUZZ_TARGETS); do \
	  $(call fuzz_corpus,$$t); \
	  secs=$(FUZZ_EACH); [ $$t != gguf ] || secs=$$((2 * $(FUZZ_EACH))); \
	  case $$t in gguf) ml=$(call fuzz_maxlen,gguf);; tok) ml=$(call fuzz_maxlen,tok);; *) ml=65536;; esac; \
	  build-fuzz/fuzz_$$t -max_total_time=$$secs $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS)) -max_len=$$ml \
	    -rss_limit_mb=2048 -timeout=$(FUZZ_TIMEOUT) -print_final_stats=1 -artifact_prefix=build-fuzz/ build-fuzz/corpus-$$t \
	    > build-fuzz/fuzz-$$t.log 2>&1 || { rc=1; echo "fuzz_$$t: FAILED"; tail -n 40 build-fuzz/fuzz-$$t.log; }; \
	  n=$$(sed -n 's/^stat::number_of_executed_units: *//p' build-fuzz/fuzz-$$t.log); \
	  r=$$(sed -n 's/^stat::average_exec_per_sec: *//p' build-fuzz/fuzz-$$t.log); \
	  echo "fuzz_$$t: $${n:-0} executions in $$secs s at most ($${r:-0}/s)" | tee -a build-fuzz/execs.txt; \
	done; $(if $(FUZZ_REPORT),cat build-fuzz/execs.txt >> $(FUZZ_REPORT);) exit $$rc

# ---- benchmark sweep (perf/run_bench.sh -> perf/compare_llamacpp.sh: resident pp/tg and decode at
# 1.5 ... 6 GiB free, Sluice vs the llama.cpp build in LLAMA_CPP_BIN when set; .md/.csv/.json/.svg
# in perf/results; < 20 min on the 8B; generates the 8B model once if none is cached) ----
bench: all
	@BUILD=$(BUILD) perf/run_bench.sh

# ---- piped ring (engine/cli/ring/): host builds only, each part when its library is here ----
# The planner (`sluice plan --ring`) needs GLPK. None of it is in libsluice: it links into the
# `sluice` binary and its own tests, so the library, its install check and the cross builds
# never depend on it.
ifeq ($(CROSS),)
RING_GLPK := $(wildcard /usr/include/glpk.h)
endif
RING_PLAN_SRCS := $(addprefix engine/cli/ring/,ring_json.c ring_cluster.c ring_cost.c ring_ilp.c \
                  ring_model.c cli_ring_plan.c)
RING_PLAN_OBJS := $(RING_PLAN_SRCS:%.c=$(BUILD)/obj/%.o)
ifneq ($(RING_GLPK),)
CLI_OBJS += $(RING_PLAN_OBJS)
$(BUILD)/sluice: $(RING_PLAN_OBJS)
$(BUILD)/sluice: LDLIBS += -lglpk
$(BUILD)/obj/engine/cli/cli_plan.o: ALL_CFLAGS += -DSL_HAVE_RING_PLAN=1
RING_TEST_BINS := $(BUILD)/tests/ring/test_ring_plan
$(BUILD)/obj/tests/ring/%.o: ALL_CFLAGS += -DSL_BUILD_DIR='"$(BUILD)"'
$(BUILD)/tests/ring/test_ring_plan: $(BUILD)/obj/tests/ring/test_ring_plan.o $(filter-out %/cli_ring_plan.o,$(RING_PLAN_OBJS)) $(STATIC_LIB) | $(BUILD)/sluice
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ -lcriterion -lglpk $(LDLIBS)
# Open MPI: `mpirun -np N sluice ring-profile` and `sluice run --ring` (engine/cli/ring/ring_mpi_*.c),
# and their test, which runs mpirun on loopback through tests/ring/ring_mpi.sh.
ifeq ($(CROSS),)
MPICC ?= mpicc
RING_MPI := $(shell command -v $(MPICC) 2>/dev/null)
endif
ifneq ($(RING_MPI),)
MPI_CFLAGS := $(shell $(MPICC) --showme:compile)
MPI_LIBS := $(shell $(MPICC) --showme:link)
RING_MPI_SRCS := $(wildcard engine/cli/ring/ring_mpi_*.c)
RING_MPI_OBJS := $(RING_MPI_SRCS:%.c=$(BUILD)/obj/%.o)
$(RING_MPI_OBJS): ALL_CFLAGS += $(MPI_CFLAGS)
CLI_OBJS += $(RING_MPI_OBJS)
$(BUILD)/obj/engine/cli/cli_run.o: ALL_CFLAGS += -DSL_HAVE_RING_RUN=1
$(BUILD)/sluice: $(RING_MPI_OBJS)
$(BUILD)/sluice: LDLIBS += $(MPI_LIBS)
RING_TEST_BINS += $(BUILD)/tests/ring/test_ring_mpi
$(BUILD)/tests/ring/test_ring_mpi: $(BUILD)/obj/tests/ring/test_ring_mpi.o $(BUILD)/sluice
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $< -lcriterion $(LDLIBS)
else
$(warning ring: Open MPI not found ($(MPICC)): `sluice ring-profile` is NOT built and its tests do not run; apt-get install libopenmpi-dev openmpi-bin)
endif
TEST_BINS += $(RING_TEST_BINS)
tests check: $(RING_TEST_BINS)
else ifeq ($(CROSS),)
$(warning ring: GLPK not found (/usr/include/glpk.h): `sluice plan --ring` is NOT built; apt-get install libglpk-dev)
endif

# ---- set-up, demo, install ----------------------------------------------
DEPS := build-essential liburing-dev libnuma-dev libcriterion-dev gcc-aarch64-linux-gnu \
        libc6-dev-arm64-cross qemu-user clang gnuplot-nox unicode-data pkg-config \
        default-jdk-headless python3 python3-numpy
DEPS += python3-venv   # tests/bind/pip_check.sh: pip install of the Python package in a fresh venv
DEPS += libopenmpi-dev openmpi-bin libglpk-dev   # engine/cli/ring/: Open MPI (sluice ring-profile), GLPK (the ring planner's ILPs)
DEPS += libmicrohttpd-dev libcjson-dev   # sluice serve (engine/cli/serve/)
deps:
	@missing=$$(for p in $(DEPS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	  grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing $$missing"; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# sluice serve's client test (tests/serve/run.sh): node and npm from Debian when missing, then
# the locked openai package (npm ci from tests/serve/package-lock.json; node_modules not committed).
deps: deps-node
deps-node:
	@command -v node >/dev/null && command -v npm >/dev/null || { \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; echo "make deps: installing nodejs npm"; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; }
	@[ tests/serve/node_modules/.package-lock.json -nt tests/serve/package-lock.json ] || \
	  (cd tests/serve && npm ci --no-audit --no-fund --loglevel=error)

DEMO_MODEL ?= $(SHARED)/models/stories260K.gguf
# The main job: a generation streamed layer by layer through io_uring under a
# 2 MiB weight budget (the model is 1.1 MiB of tensors + KV + metadata), with
# the planner's decision first and per-token I/O telemetry after.
demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	$(BUILD)/sluice plan -m $(DEMO_MODEL) --mem-budget 2M -c 256
	$(BUILD)/sluice run -m $(DEMO_MODEL) -p "Once upon a time" -n 96 -c 256 \
	  --mode stream --mem-budget 2M --seed 42 --stats

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/sluice \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BUILD)/sluice $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libsluice.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libsluice.so.$(SOMAJOR)
	ln -sf libsluice.so.$(SOMAJOR) $(DESTDIR)$(PREFIX)/lib/libsluice.so
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(PREFIX)/include/sluice/
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: sluice\nDescription: Sluice LLM engine and weight streamer\nVersion: %s\nLibs: -L$${libdir} -lsluice\nLibs.private: %s\nCflags: -I$${includedir}/sluice\n' \
	  '$(PREFIX)' '$(VERSION)' '$(LDLIBS)' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/sluice.pc

clean:
	rm -rf build build-asan build-fuzz build-aarch64-linux-gnu build-android

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
