# warpd — build, run, test. `make run` and `make test` are all a new user needs (see README.md).
CUDA_HOME ?= /usr/local/cuda
PREFIX    ?= /usr/local
DESTDIR   ?=
CC        ?= cc
HOST      ?= 127.0.0.1
PORT      ?= 8080
BUILD     ?= build
# Every core unless the caller says how many (a -jN on the command line wins: make -j1): plain
# `make test`, as the README gives it, builds the trees side by side, and tests/run.sh runs the suites
# side by side too. Only the top make sets it; a make it starts shares its jobs.
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

PKGS      := libmicrohttpd libcjson
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ifeq ($(strip $(PKG_LIBS)),)
PKG_LIBS := -lmicrohttpd -lcjson   # plain CPATH/LIBRARY_PATH (the GPU machine)
endif

WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
# Where the binaries find the kernel templates (bench/ab.sh builds variants with a relative one).
TEMPLATES_DIR ?= $(abspath templates)
ALL_CFLAGS := -std=c11 $(WARN) $(CFLAGS) -ffp-contract=off -D_GNU_SOURCE -MMD -MP -I. -Iserver \
              -I$(CUDA_HOME)/include $(PKG_CFLAGS) \
              -DWP_DEFAULT_TEMPLATES=\"$(TEMPLATES_DIR)\" -DWP_DEFAULT_WEB=\"$(abspath clients/web)\" \
              -DWP_DEFAULT_CUDA_HOME=\"$(CUDA_HOME)\"
LDLIBS    := $(PKG_LIBS) -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnvrtc -ldl -lpthread -lm
SAN       := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

LIB_SRC   := $(filter-out server/main.c,$(wildcard server/*.c server/*/*.c)) $(wildcard kernels/*.c)
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
API_SRC   := $(wildcard tests/api/*.c)
GPU_SRC   := $(filter-out tests/gpu/gpu_harness.c,$(wildcard tests/gpu/*.c))
GPU_CU    := $(wildcard tests/gpu/*.cu)
NVCC      ?= $(CUDA_HOME)/bin/nvcc
# Benchmarks: one folder per thing measured (bench/README.md); bench/lib/ holds what they share
BENCH_SRC := $(filter-out bench/lib/%,$(wildcard bench/*/*.c))
BENCH_CU  := $(wildcard bench/*/*.cu)
NVCC_LDLIBS := $(PKG_LIBS) -L$(CUDA_HOME)/lib64 -Xlinker -rpath=$(CUDA_HOME)/lib64 -lnvrtc -ldl -lpthread -lm

# Two flavours of every object: plain (build/) and sanitized (build/asan/).
obj   = $(patsubst %.c,$(BUILD)/%.o,$(1))
aobj  = $(patsubst %.c,$(BUILD)/asan/%.o,$(1))

LIB_OBJ  := $(call obj,$(LIB_SRC))
ALIB_OBJ := $(call aobj,$(LIB_SRC))

.PHONY: all deps run test test-build check test-unit test-api test-web test-lint test-gpu bench clean install format check-format
all: $(BUILD)/warpd

deps:
	@./.ci/deps.sh

# The plain tree takes Debian's hardening flags where dpkg-buildflags is found (those the package ships
# with; its -g -O2 are CFLAGS' already), so the package's tree (deb-obj, below) compiles again only the
# two files that name the installed paths. Not its link-time optimization (Ubuntu's dpkg-buildflags asks
# for it): the objects must link with any compiler the machine has, the GPU machines' own included.
DEB_FLAGS  = DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
HARDEN    := $(filter-out -g -O% -flto% -ffat-lto-objects,$(shell $(DEB_FLAGS) CFLAGS 2>/dev/null)) \
             $(shell $(DEB_FLAGS) CPPFLAGS 2>/dev/null)
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(HARDEN) -c $< -o $@
# The sanitized trees (asan, fuzz) keep line tables and inlined frames (SAN_G), what their reports
# print, but not the local variables of -g: a sixth less compile time. gdb sessions: the plain tree.
SAN_G     ?= -g1
$(BUILD)/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN) $(SAN_G) -c $< -o $@
# The sanitized test programs' own code (not the library under test, which stays at $(CFLAGS)) at
# TEST_OPT: large files of checks, which compile in well under half the time at -Og.
TEST_OPT  ?= -Og
$(BUILD)/asan/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN) $(SAN_G) $(TEST_OPT) -c $< -o $@

$(BUILD)/libwarpd.a: $(LIB_OBJ)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/asan/libwarpd.a: $(ALIB_OBJ)
	@rm -f $@; ar rcs $@ $^

$(BUILD)/warpd: $(BUILD)/server/main.o $(BUILD)/libwarpd.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/asan/warpd: $(BUILD)/asan/server/main.o $(BUILD)/asan/libwarpd.a
	$(CC) $(CFLAGS) $(SAN) -o $@ $^ $(LDLIBS)

# Unit and API test programs run sanitized; GPU tests and benchmarks run plain.
$(BUILD)/asan/tests/%: $(BUILD)/asan/tests/%.o $(BUILD)/asan/libwarpd.a
	$(CC) $(CFLAGS) $(SAN) -o $@ $^ $(LDLIBS)
# Unit programs of the plain tree, linked with the release library: tests/unit/jit_sweep.c, test_jit's
# sweep beyond its quick set (NVRTC-bound: under ASan's allocator it takes twice the time). make test only.
PLAIN_UNIT_SRC := tests/unit/jit_sweep.c
$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(BUILD)/libwarpd.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
# Each GPU test program is one .c with the shared harness (tests/gpu/gpu_harness.[ch]).
$(BUILD)/tests/gpu/%: $(BUILD)/tests/gpu/%.o $(BUILD)/tests/gpu/gpu_harness.o $(BUILD)/libwarpd.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
.SECONDARY: $(BUILD)/tests/gpu/gpu_harness.o
# Standalone CUDA programs (templates checked directly, CUB comparisons): built with nvcc.
$(BUILD)/tests/gpu/%: tests/gpu/%.cu $(wildcard templates/*.cuh) kernels/wp_abi.h
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++17 -O2 -arch=sm_90 -Ikernels -Itemplates -DWP_NEED_FP16 -o $@ $<
# Objects first, then the archive: a benchmark's extra objects (below) come after libwarpd.a in $^.
$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/libwarpd.a
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LDLIBS)
# The C benchmarks that drive the engine as the CUDA ones do, through bench/lib/reduce_entry.c
BENCH_ENTRY_C := stats/bench_stats reduce/bench_anywidth reduce/bench_map
$(patsubst %,$(BUILD)/bench/%,$(BENCH_ENTRY_C)): $(BUILD)/bench/lib/reduce_entry.o
.SECONDARY: $(BUILD)/bench/lib/reduce_entry.o
# CUDA benchmarks (CUB side by side): nvcc, driving the engine through bench/lib/ (C).
$(BUILD)/bench/%: bench/%.cu $(BUILD)/bench/lib/reduce_entry.o $(BUILD)/libwarpd.a
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++17 -O2 -arch=sm_90 -Ibench -o $@ $< $(BUILD)/bench/lib/reduce_entry.o $(BUILD)/libwarpd.a $(NVCC_LDLIBS)

$(BUILD)/bench/launch/bench_launch: NVCC_LDLIBS += -lcuda # calls the Driver API's launches directly
$(BUILD)/bench/launch/bench_smalljob: NVCC_LDLIBS += -lcuda # submits through the Driver API, as warpd does

# A stand-in CUDA driver (tests/mockcuda): the cuda backend's host paths without a GPU (tests/api/mockcuda.sh).
MOCKCUDA  := $(BUILD)/mockcuda/libcuda.so.1
$(MOCKCUDA): tests/mockcuda/mockcuda.c tests/mockcuda/mock_resident.c tests/mockcuda/mock_resident.h \
  tests/mockcuda/resident_lines.h kernels/wp_abi.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) -O2 -g -fPIC -shared -fvisibility=hidden -Wl,--no-undefined -I$(CUDA_HOME)/include -o $@ \
	  tests/mockcuda/mockcuda.c tests/mockcuda/mock_resident.c -lpthread

# The kernels the API case table compiles only in passing (tests/api/kcache.json), compiled once by the
# sanitized daemon (--prewarm --exit): the suites that run the table start their daemons on a copy
# (tests/daemon.sh, warpd_seed), so that each run compiles only what it tests.
KCACHE    := $(BUILD)/kcache
$(KCACHE).stamp: $(BUILD)/asan/warpd tests/api/kcache.json $(wildcard templates/*) kernels/wp_abi.h
	@rm -rf $(KCACHE)
	@$(BUILD)/asan/warpd --backend emu --cache-dir $(KCACHE) --prewarm tests/api/kcache.json --exit
	@touch $@

# libFuzzer harnesses (rules in the fuzzing block below; listed here because test: names them)
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN  := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
UNIT_BIN  := $(patsubst %.c,$(BUILD)/asan/%,$(UNIT_SRC))
PLAIN_UNIT_BIN := $(patsubst %.c,$(BUILD)/%,$(PLAIN_UNIT_SRC))
API_BIN   := $(patsubst %.c,$(BUILD)/asan/%,$(API_SRC))
GPU_BIN   := $(patsubst %.c,$(BUILD)/%,$(GPU_SRC)) $(patsubst %.cu,$(BUILD)/%,$(GPU_CU))
BENCH_BIN := $(patsubst %.c,$(BUILD)/%,$(BENCH_SRC)) $(patsubst %.cu,$(BUILD)/%,$(BENCH_CU))
# The test programs' objects are kept: as intermediates make would delete them after the first build,
# and the next make (a make check after make test) would compile every one again.
.SECONDARY: $(call aobj,$(UNIT_SRC) $(API_SRC)) $(call obj,$(GPU_SRC) $(BENCH_SRC) $(PLAIN_UNIT_SRC)) \
            $(patsubst %.c,$(BUILD)/fuzz/%.o,$(FUZZ_SRC))

# deps first, then the build (make runs on every core: the two must not race).
run: deps
	@$(MAKE) --no-print-directory $(BUILD)/warpd
	$(BUILD)/warpd --listen $(HOST):$(PORT)

# The whole CI suite: the GPU programs first (their tally is not the last line), then unit (ASan+UBSan),
# API against a sanitized daemon on loopback, web, clients, package, scale, fuzz. The GPU programs say
# SKIPPED without a GPU (and run for real with one: see test-gpu).
# The .cu ones only where nvcc is.
GPU_TEST_BIN := $(patsubst %.c,$(BUILD)/%,$(GPU_SRC)) $(if $(wildcard $(NVCC)),$(patsubst %.cu,$(BUILD)/%,$(GPU_CU)))
# The packages first (deps), then every tree at once in a make of its own (it reads pkg-config again,
# after deps may have installed what it names): plain, sanitized, fuzzing, the package's hardened one.
test: deps
	@$(MAKE) --no-print-directory test-build
	@BUILD=$(BUILD) ./tests/run.sh gpu; gpu_rc=$$?; BUILD=$(BUILD) ./tests/run.sh all && exit $$gpu_rc
test-build: check-format $(BUILD)/warpd $(BUILD)/asan/warpd $(UNIT_BIN) $(PLAIN_UNIT_BIN) $(API_BIN) $(MOCKCUDA) $(KCACHE).stamp \
            $(GPU_TEST_BIN) $(FUZZ_BIN)

# The edit-compile-test loop: the sanitized tree only, then the layout rules, the unit programs and the
# API case table on the emulator (tests/run.sh check); make test before pushing.
check: $(BUILD)/asan/warpd $(UNIT_BIN) $(API_BIN) $(KCACHE).stamp
	@BUILD=$(BUILD) ./tests/run.sh check

test-unit: $(UNIT_BIN) $(PLAIN_UNIT_BIN)
	@BUILD=$(BUILD) ./tests/run.sh unit
test-api: $(BUILD)/asan/warpd $(API_BIN) $(MOCKCUDA) $(KCACHE).stamp
	@BUILD=$(BUILD) ./tests/run.sh api
test-lint: $(BUILD)/warpd
	@BUILD=$(BUILD) ./tests/run.sh lint

test-gpu: $(BUILD)/warpd $(GPU_BIN) $(BUILD)/asan/warpd $(BUILD)/asan/tests/api/api_devices
	@BUILD=$(BUILD) ./tests/run.sh gpu

bench: $(BUILD)/warpd $(BENCH_BIN)
	@BUILD=$(BUILD) ./bench/run.sh

install: $(BUILD)/warpd
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/warpd/templates $(DESTDIR)$(PREFIX)/share/warpd/web
	install -m 755 $(BUILD)/warpd $(DESTDIR)$(PREFIX)/bin/warpd
	install -m 644 templates/* kernels/wp_abi.h $(DESTDIR)$(PREFIX)/share/warpd/templates/
	cp -r clients/web/. $(DESTDIR)$(PREFIX)/share/warpd/web/
	install -d $(DESTDIR)$(PREFIX)/share/warpd/prewarm && install -m 644 prewarm/default.json $(DESTDIR)$(PREFIX)/share/warpd/prewarm/

# ---- Debian package (packaging/deb/; tested by tests/package/run.sh, a suite of `make test`) ----
# `make deb`: $(BUILD)/warpd_<version>-<revision>_<arch>.deb. The daemon is the plain tree's objects
# (compiled with Debian's hardening flags, HARDEN above) but the two files that name the installed
# paths of the templates and the playground, compiled again in $(BUILD)/deb-obj with them;
# packaging/deb/build.sh lays out and builds the package. The version is WP_VERSION
# (server/engine/app.h), the one the daemon reports in /v1/info.
WP_VERSION   := $(shell sed -n 's/^\#define WP_VERSION "\(.*\)"/\1/p' server/engine/app.h)
DEB_REVISION ?= 1
DEB_VERSION  := $(WP_VERSION)-$(DEB_REVISION)
DEB_FILE      = $(BUILD)/warpd_$(DEB_VERSION)_$(shell dpkg --print-architecture).deb
DEB_OBJDIR   := $(BUILD)/deb-obj
DEB_CFLAGS    = $(filter-out -DWP_DEFAULT_TEMPLATES=% -DWP_DEFAULT_WEB=%,$(ALL_CFLAGS)) $(HARDEN) \
                -DWP_DEFAULT_TEMPLATES=\"/usr/share/warpd/templates\" -DWP_DEFAULT_WEB=\"/usr/share/warpd/web\"
DEB_PATHS    := server/flags.c server/main.c
DEB_OBJ      := $(filter-out $(call obj,$(DEB_PATHS)),$(LIB_OBJ)) $(patsubst %.c,$(DEB_OBJDIR)/%.o,$(DEB_PATHS))
.PHONY: deb test-package test-scale
deb: $(DEB_OBJDIR)/warpd
	packaging/deb/build.sh $< $(DEB_VERSION) $(BUILD)/deb-stage $(DEB_FILE)
$(DEB_OBJDIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(DEB_CFLAGS) -c $< -o $@
$(DEB_OBJDIR)/warpd: $(DEB_OBJ)
	$(CC) $(shell $(DEB_FLAGS) CFLAGS) $(shell $(DEB_FLAGS) LDFLAGS) -o $@ $^ $(LDLIBS)
# make test compiles the package's tree with the others, so the package suite's `make deb` only packs.
test-build: $(DEB_OBJDIR)/warpd
# Both suites also run in `make test` (tests/run.sh all); the package one builds the .deb itself.
test-package:
	@BUILD=$(BUILD) ./tests/run.sh package
test-scale: $(BUILD)/warpd
	@BUILD=$(BUILD) ./tests/run.sh scale

format:
	clang-format -i server/*.[ch] server/*/*.[ch] kernels/*.[ch] tests/*/*.[ch] bench/*/*.[ch]
check-format:
	clang-format --dry-run --Werror server/*.[ch] server/*/*.[ch] kernels/*.[ch] tests/unit/*.[ch] tests/api/*.[ch] tests/gpu/*.[ch] bench/*/*.[ch]
	clang-format --dry-run --Werror tests/fuzz/*.[ch] tests/mockcuda/*.[ch]

# ---- fuzzing (transport hardening): libFuzzer harnesses tests/fuzz/fuzz_*.c, clang with ASan + UBSan, over the
# library built again with coverage. make fuzz: each for FUZZ_SECONDS (60) from its seed corpus
# tests/fuzz/corpus/<name>/; make test runs each a fixed number of inputs from a fixed seed (tests/run.sh
# fuzz, FUZZ_FIXED: the same inputs every run).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN  := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FLIB_OBJ  := $(patsubst %.c,$(BUILD)/fuzz/%.o,$(LIB_SRC))
$(BUILD)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(ALL_CFLAGS) -O1 $(SAN_G) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@
$(BUILD)/fuzz/libwarpd.a: $(FLIB_OBJ)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/tests/fuzz/fuzz_%.o $(BUILD)/fuzz/libwarpd.a
	$(FUZZ_CC) -g $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
.PHONY: fuzz test-fuzz
fuzz: $(FUZZ_BIN)
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) ./tests/fuzz/run.sh
test-fuzz: $(FUZZ_BIN)
	@BUILD=$(BUILD) ./tests/run.sh fuzz

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
