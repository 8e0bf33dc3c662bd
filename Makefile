# vigil: one non-recursive Makefile.
#   make                      build ./vigil (and the test NVML library)
#   make test                 build under ASan+UBSan and run the whole suite
#   make test TEST_SANITIZE=  run the suite without sanitizers
#   make SANITIZE=address,undefined    sanitized build of everything
#   make fuzz                 build and run the fuzz targets (clang/libFuzzer) for FUZZ_SECONDS
#   make bench                run the benchmarks (bench/)
#   make install PREFIX=/usr/local DESTDIR=
#   make deb                  build/vigil_VERSION_ARCH.deb (Debian package; docs/PACKAGING.md)
#   make V=1                  show commands

VERSION := 0.1.0
CC ?= cc
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
MANDIR ?= $(PREFIX)/share/man
CFLAGS ?= -O2 -g
SANITIZE ?=
TEST_SANITIZE ?= address,undefined
FUZZ_SECONDS ?= 60
TEST_FUZZ_SECONDS ?= 3
# Jobs for make test's build (its tests have their own two lanes, tests/harness.c).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
DEVELOPER ?= 1

ifeq ($(SANITIZE),)
BUILD ?= build
else
BUILD ?= build/san
endif

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter \
	-Wformat=2 -Wno-format-nonliteral -Wvla
ifeq ($(DEVELOPER),1)
WARN += -Werror
endif
ALL_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -DVIGIL_VERSION='"$(VERSION)"' \
	-DVIGIL_LIBDIR='"$(LIBDIR)"' -MMD -MP $(CFLAGS)
ALL_LDFLAGS := $(LDFLAGS)
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
endif
LIBS := -ldl -lm -lpthread

ifeq ($(V),1)
Q :=
else
Q := @
endif

LIB_SRC := $(sort $(wildcard src/lib/*.c src/core/*.c src/sys/*.c src/gpu/*.c src/logs/*.c src/checks/*.c src/stress/*.c \
	src/slurm/*.c src/agent/*.c src/supervise/*.c src/sim/*.c src/fleet/*.c src/qualify/*.c src/diagnose/*.c src/fabric/*.c src/cmd/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/src/vigil.o
TEST_SRC := $(sort $(wildcard tests/*.c tests/unit/*.c))
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
FAKE_NVML_SRC := $(wildcard tests/fake-nvml/*.c)

VIGIL := $(BUILD)/vigil
LIBVIGIL := $(BUILD)/libvigil.a
FAKE_NVML := $(BUILD)/libvigil-fakenvml.so
TEST_RUNNER := $(BUILD)/test-runner

NCCL_RECORDER := $(BUILD)/libnccl-profiler-vigil.so

all: $(VIGIL) $(FAKE_NVML) $(NCCL_RECORDER)
ifeq ($(BUILD),build)
all: vigil
vigil: $(VIGIL)
	$(Q)ln -sf $(VIGIL) vigil
endif

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

# the trainer's module is taken into pyhook.o whole (.incbin, src/supervise/pyhook.c)
$(BUILD)/src/supervise/pyhook.o build/fuzz/obj/src/supervise/pyhook.o: contrib/python/vigil_train.py

$(LIBVIGIL): $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(VIGIL): $(MAIN_OBJ) $(LIBVIGIL)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(MAIN_OBJ) $(LIBVIGIL) $(ALL_LDFLAGS) $(LIBS)

# The fake NVML library serves a snapshot file; it is built without sanitizers so that it can be
# dlopen'ed by any build of vigil.
FAKE_NVML_HDR := $(wildcard tests/fake-nvml/*.h) src/gpu/nvml.h src/gpu/snapshot.h
FAKE_NVML_LEGACY := $(BUILD)/libvigil-fakenvml-legacy.so
$(FAKE_NVML): $(FAKE_NVML_SRC) $(FAKE_NVML_HDR)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  SHLIB   $@")
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -fPIC -shared -o $@ $(FAKE_NVML_SRC)

$(TEST_RUNNER): $(TEST_OBJ) $(LIBVIGIL)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(TEST_OBJ) $(LIBVIGIL) $(ALL_LDFLAGS) $(LIBS)

# The same fake acting as an old NVML: no _v2/_v3 names, no field values or remapped rows.
$(FAKE_NVML_LEGACY): $(FAKE_NVML_SRC) $(FAKE_NVML_HDR)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  SHLIB   $@")
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -DFAKE_NVML_LEGACY -O2 -g -Wall -Wextra -fPIC -shared -o $@ $(FAKE_NVML_SRC)

build-tests: $(VIGIL) $(FAKE_NVML) $(FAKE_NVML_LEGACY) $(NCCL_RECORDER) $(TEST_RUNNER)

# The NCCL flight recorder (src/nccl/): a plugin NCCL loads into the trainer, so it links
# nothing of vigil's, exports only its ncclProfiler_vN tables, and is built without sanitizers
# (it must load into any process). No CUDA or NCCL is needed to build it.
$(NCCL_RECORDER): src/nccl/recorder.c src/nccl/ring.h src/nccl/profiler_api.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  SHLIB   $@")
	$(Q)$(CC) -std=gnu11 -O2 -g -Wall -Wextra -fPIC -shared -fvisibility=hidden -o $@ src/nccl/recorder.c

# CUDA helpers (cuda/ -> $(BUILD)/vigil-gpu, $(BUILD)/vigil-nccl): built when nvcc is found, so CI
# compiles them; vigil itself builds and runs without CUDA and says so (docs/STRESS.md).
#   make cuda                        build them (fails clearly without nvcc)
#   make cuda NCCL_HOME=DIR CUBLAS_HOME=DIR   where include/ and lib64/ (or lib/) hold them
NVCC ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
HAVE_NVCC := $(wildcard $(NVCC))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUBLAS_HOME ?= $(CUDA_HOME)
NCCL_HOME ?= $(CUDA_HOME)
cuda_libdir = $(if $(wildcard $(1)/lib64),$(1)/lib64,$(1)/lib)
NVCC_GENCODE ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCC_FLAGS ?= -O3
CUDA_ALL_FLAGS := -std=c++17 $(NVCC_GENCODE) $(NVCC_FLAGS) -Xcompiler -Wall,-Wextra \
	-I$(CUBLAS_HOME)/include -I$(NCCL_HOME)/include
CUDA_HELPERS := $(BUILD)/vigil-gpu $(BUILD)/vigil-nccl
GPU_HELPER_OBJ := $(addprefix $(BUILD)/cuda/,common.o nvml_lite.o gemm.o mem.o det.o vigil_gpu.o)
NCCL_HELPER_OBJ := $(addprefix $(BUILD)/cuda/,common.o vigil_nccl.o)

$(BUILD)/cuda/%.o: cuda/%.cu $(wildcard cuda/*.cuh)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(CUDA_ALL_FLAGS) -c -o $@ $<
$(BUILD)/vigil-gpu: $(GPU_HELPER_OBJ)
	@$(if $(Q),echo "  NVLINK  $@")
	$(Q)$(NVCC) $(NVCC_GENCODE) -o $@ $^ -L$(call cuda_libdir,$(CUBLAS_HOME)) -lcublasLt -ldl \
		-lpthread -Xlinker -rpath=$(call cuda_libdir,$(CUBLAS_HOME))
$(BUILD)/vigil-nccl: $(NCCL_HELPER_OBJ)
	@$(if $(Q),echo "  NVLINK  $@")
	$(Q)$(NVCC) $(NVCC_GENCODE) -o $@ $^ -L$(call cuda_libdir,$(NCCL_HOME)) -lnccl -ldl \
		-lpthread -Xlinker -rpath=$(call cuda_libdir,$(NCCL_HOME))
cuda:
	@test -x "$(NVCC)" || { echo "make cuda: no nvcc (looked for '$(NVCC)'; set NVCC=)"; exit 1; }
	$(Q)$(MAKE) --no-print-directory $(CUDA_HELPERS)
# The determinism test's reference digests travel with the helpers (next to vigil in the build,
# in $(LIBDIR)/vigil installed), where vigil looks for them.
$(BUILD)/determinism-ref.tsv: cuda/determinism-ref.tsv
	@mkdir -p $(dir $@)
	$(Q)cp $< $@
all: $(BUILD)/determinism-ref.tsv
build-tests: $(BUILD)/determinism-ref.tsv
ifneq ($(HAVE_NVCC),)
all: $(CUDA_HELPERS)
build-tests: $(CUDA_HELPERS)
endif

# The suite: installs what it needs when it can (tests/setup-deps), then runs every test once.
# The fuzz targets are built too (when clang with libFuzzer is there) and each runs briefly
# (TEST_FUZZ_SECONDS: a smoke run of each parser's seeds and mutations; long runs are make
# fuzz). The build runs TEST_JOBS at once: a serial build was a third of make test's time.
test:
	$(Q)sh tests/setup-deps
	$(Q)$(MAKE) --no-print-directory -j$(TEST_JOBS) SANITIZE=$(TEST_SANITIZE) run-tests

run-tests: build-tests
	$(Q)if command -v clang >/dev/null 2>&1; then $(MAKE) --no-print-directory fuzz-build || \
		echo "# the fuzz targets did not build: their tests will be skipped"; fi
	$(Q)VIGIL_FUZZ_DIR=$(abspath build/fuzz) VIGIL_FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) \
		VIGIL_BIN=$(abspath $(VIGIL)) VIGIL_FAKE_NVML=$(abspath $(FAKE_NVML)) \
		VIGIL_SRCDIR=$(CURDIR) VIGIL_BUILD=$(abspath $(BUILD)) \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		$(TEST_RUNNER) $(TESTS)

# Fuzz targets: one per parser, under tests/fuzz/. Needs clang with libFuzzer.
FUZZ_SRC := $(wildcard tests/fuzz/*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
# The library is compiled for them once (instrumented for coverage, not linked with libFuzzer's
# main) and each target links against it: compiling every library source again per target made
# the fuzz build most of make test's time on two cores.
FUZZ_LIB_SRC := $(filter-out src/cmd/%,$(LIB_SRC))
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=build/fuzz/obj/%.o)
FUZZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE -DVIGIL_VERSION='"$(VERSION)"' -DVIGIL_LIBDIR='"$(LIBDIR)"' \
	-g -O1 -fno-sanitize-recover=undefined -MMD -MP
build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<
build/fuzz/libvigil-fuzz.a: $(FUZZ_LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^
build/fuzz/%: tests/fuzz/%.c build/fuzz/libvigil-fuzz.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
		-o $@ $< build/fuzz/libvigil-fuzz.a $(LIBS)
fuzz-build: $(FUZZ_BIN)
fuzz: fuzz-build
	$(Q)for f in $(FUZZ_BIN); do n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 build/fuzz/corpus-$$n \
		tests/fuzz/corpus/$$n || exit 1; done

# Benchmark programs: bench/*.c, each linked with the library.
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
$(BUILD)/bench/%: bench/%.c $(LIBVIGIL)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBVIGIL) $(ALL_LDFLAGS) $(LIBS)
bench-build: all $(BENCH_BIN)
bench: bench-build
	$(Q)BUILD=$(BUILD) sh bench/run

# Every page under docs/: vigil.1 and one per command (readable before installing: man ./docs/vigil.1).
# Beside the program: the systemd unit, the Slurm wrappers, the NPD plugin's configuration, the
# shell completions and a default /etc/vigil/vigil.conf (every key commented out; an existing one
# is left alone), their /usr/local/bin paths made $(BINDIR)'s.
MAN_PAGES := $(wildcard docs/*.1)
SYSCONFDIR ?= /etc
DATADIR ?= $(PREFIX)/share
# the trainer's module (contrib/python/vigil_train.py): vigil run puts it on the ranks'
# PYTHONPATH itself; outside vigil run, PYTHONPATH=$(PYTHON3DIR) (not dist-packages: that would
# make the package depend on python3 for one optional module)
PYTHON3DIR ?= $(DATADIR)/vigil/python
UNITDIR ?= $(PREFIX)/lib/systemd/system
FIX_PATHS = sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/usr/bin/vigil |$(BINDIR)/vigil |g'
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/vigil $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(DATADIR)/vigil/npd $(DESTDIR)$(DATADIR)/vigil/slurm \
		$(DESTDIR)$(SYSCONFDIR)/vigil
	install -m 0755 $(VIGIL) $(DESTDIR)$(BINDIR)/vigil
	install -m 0644 $(FAKE_NVML) $(DESTDIR)$(LIBDIR)/vigil/libvigil-fakenvml.so
	install -m 0644 $(NCCL_RECORDER) $(DESTDIR)$(LIBDIR)/vigil/libnccl-profiler-vigil.so
	install -m 0644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 cuda/determinism-ref.tsv $(DESTDIR)$(LIBDIR)/vigil/determinism-ref.tsv
	install -d $(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/vendor-completions \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	install -m 0644 contrib/completion/vigil.bash \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/vigil
	install -m 0644 contrib/completion/_vigil $(DESTDIR)$(DATADIR)/zsh/vendor-completions/_vigil
	install -d $(DESTDIR)$(PYTHON3DIR)
	install -m 0644 contrib/python/vigil_train.py $(DESTDIR)$(PYTHON3DIR)/vigil_train.py
	install -m 0644 contrib/completion/vigil.fish \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/vigil.fish
	for h in $(CUDA_HELPERS); do if [ -x "$$h" ]; then \
		install -m 0755 "$$h" $(DESTDIR)$(LIBDIR)/vigil/; fi; done
	$(FIX_PATHS) contrib/systemd/vigil-agent.service > $(DESTDIR)$(UNITDIR)/vigil-agent.service
	for w in vigil-slurm-health vigil-slurm-health-direct; do \
		$(FIX_PATHS) contrib/slurm/$$w > $(DESTDIR)$(BINDIR)/$$w && \
		chmod 0755 $(DESTDIR)$(BINDIR)/$$w || exit 1; done
	$(FIX_PATHS) contrib/slurm/slurm.conf.vigil > $(DESTDIR)$(DATADIR)/vigil/slurm/slurm.conf.vigil
	$(FIX_PATHS) contrib/npd/vigil-plugin-monitor.json \
		> $(DESTDIR)$(DATADIR)/vigil/npd/vigil-plugin-monitor.json
	chmod 0644 $(DESTDIR)$(UNITDIR)/vigil-agent.service \
		$(DESTDIR)$(DATADIR)/vigil/slurm/slurm.conf.vigil \
		$(DESTDIR)$(DATADIR)/vigil/npd/vigil-plugin-monitor.json
	test -e $(DESTDIR)$(SYSCONFDIR)/vigil/vigil.conf || \
		install -m 0644 contrib/vigil.conf $(DESTDIR)$(SYSCONFDIR)/vigil/vigil.conf

# The Debian package: build/vigil_VERSION_ARCH.deb, from a tree staged by 'make install' with
# PREFIX=/usr (a build of its own under build/deb-obj: the library directory is compiled in),
# with dpkg-deb and fakeroot (Debian bookworm: dpkg-dev, fakeroot); 'lintian FILE' has no errors
# (docs/PACKAGING.md lists the warnings and why).
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB := build/vigil_$(VERSION)_$(DEB_ARCH).deb
DEB_ROOT := build/deb-root
DEB_HARDEN := -O2 -g -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fcf-protection
deb:
	$(Q)$(MAKE) --no-print-directory BUILD=build/deb-obj SANITIZE= DEVELOPER=0 PREFIX=/usr \
		LIBDIR=/usr/lib CFLAGS="$(DEB_HARDEN)" LDFLAGS="-Wl,-z,relro -Wl,-z,now" all
	rm -rf $(DEB_ROOT)
	$(Q)$(MAKE) --no-print-directory BUILD=build/deb-obj SANITIZE= DEVELOPER=0 PREFIX=/usr \
		LIBDIR=/usr/lib CFLAGS="$(DEB_HARDEN)" LDFLAGS="-Wl,-z,relro -Wl,-z,now" \
		UNITDIR=/lib/systemd/system DESTDIR=$(CURDIR)/$(DEB_ROOT) install
	VERSION=$(VERSION) ARCH=$(DEB_ARCH) sh packaging/deb/stage $(DEB_ROOT)
	fakeroot dpkg-deb --build -Zxz $(DEB_ROOT) $(DEB)
	@echo "  DEB     $(DEB)"

lint:
	$(Q)sh tests/lint

clean:
	rm -rf build vigil

.PHONY: cuda bench-build all test run-tests build-tests fuzz fuzz-build bench install deb clean lint vigil
.DELETE_ON_ERROR:

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(FUZZ_LIB_OBJ:.o=.d)
