# acceltrace: one non-recursive GNU Makefile.
#
# Library sources are picked up by wildcard from the module folders; every folder's .c
# files go into build/libacceltrace.a. The CLI is cli/*.c. Each tests/test_<module>.c is
# one cmocka program. Generated protobuf-c code lives in build/gen/ and is never committed.

CC      := gcc
BUILD   ?= build
PKGS    := libzstd libprotobuf-c libpng jansson cmocka libxxhash zlib
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null || echo -I/usr/include/x86_64-linux-gnu/openblas-pthread)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)

OPT     ?= -O2
# -Wno-psabi: GCC notes that passing 32-byte vectors by value changed ABI in GCC 4.6; the
# eight-float vectors of capture/nn/vec8.h pass only between inlined static functions, and
# GCC prints the note in spite of a diagnostic pragma
WARN    := -Wall -Wextra -Wpedantic -Wshadow -Werror \
        $(shell $(CC) -Werror -Wno-psabi -x c -c /dev/null -o /dev/null 2>/dev/null && echo -Wno-psabi)
CFLAGS_BASE := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(OPT) -g $(WARN) -MMD -MP \
        -I. -I$(BUILD)/gen $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(BLAS_CFLAGS)
CFLAGS  += $(CFLAGS_BASE) $(EXTRA_CFLAGS)
LDLIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(BLAS_LIBS) -lpthread -lm
LDFLAGS += $(EXTRA_LDFLAGS)

# Every folder below capture/ is a workload (or a shared part of captures): found, not listed.
LIB_DIRS := common formats traces capture $(sort $(patsubst %/,%,$(wildcard capture/*/))) replay analysis
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
PROTO    := $(wildcard formats/*.proto)
GEN_C    := $(patsubst %.proto,$(BUILD)/gen/%.pb-c.c,$(PROTO))
GEN_H    := $(GEN_C:.c=.h)
LIB_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRC)) $(GEN_C:.c=.o)
CLI_SRC  := $(wildcard cli/*.c)
CLI_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(CLI_SRC))
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TEST_HELPER_SRC := $(wildcard tests/helpers/*.c)
TEST_HELPER_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(TEST_HELPER_SRC))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
LIB      := $(BUILD)/libacceltrace.a
PROG     := $(BUILD)/acceltrace

.PHONY: all test test-slow check check-build demo reproduce bench asan fuzz format format-check layering clean deps gen \
        install uninstall
.SECONDARY:

all: $(PROG) $(TEST_BIN) $(FUZZ_BIN) $(BENCH_BIN)

deps:
	@scripts/deps.sh

gen: $(GEN_H)

# The container's constants, index keys and reader messages (formats/trace_format.tab) and
# the version (common/version.h) as a C header and Python modules, committed
# (docs/trace-format.md#format-source); tests/sh/python_format.sh fails while one is stale.
.PHONY: format-tables
TRACE_FORMAT_GEN := formats/trace_format.h python/acceltrace/_format.py \
                    python/acceltrace/_version.py
# Without /usr/bin/python3 the committed outputs are kept (a C build needs no Python).
TRACE_FORMAT_RUN = if [ -x /usr/bin/python3 ]; then /usr/bin/python3 scripts/gen_trace_format.py $(1); \
    else echo "no /usr/bin/python3: keeping the committed $@" >&2; touch $@; fi
format-tables: $(TRACE_FORMAT_GEN)
formats/trace_format.h: formats/trace_format.tab scripts/gen_trace_format.py
	@$(call TRACE_FORMAT_RUN,c)
python/acceltrace/_format.py: formats/trace_format.tab scripts/gen_trace_format.py
	@$(call TRACE_FORMAT_RUN,py)
python/acceltrace/_version.py: common/version.h scripts/gen_trace_format.py
	@$(call TRACE_FORMAT_RUN,version)

# Generated protobuf-c sources; every object waits for all of them (imports).
$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: %.proto
	@mkdir -p $(BUILD)/gen
	protoc-c -I. --c_out=$(BUILD)/gen $<

$(BUILD)/gen/formats/trace.desc: $(PROTO)
	@mkdir -p $(dir $@)
	protoc-c -I. --include_imports --descriptor_set_out=$@ $(PROTO)

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c $(GEN_H)
	$(CC) $(CFLAGS) -Wno-pedantic -c -o $@ $<

$(BUILD)/%.o: %.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(PROG): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_HELPER_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_HELPER_OBJ) $(LIB) $(LDLIBS)

# Fuzz targets: under gcc they link a driver that replays the corpus; `make fuzz` uses libFuzzer.
$(BUILD)/fuzz/%: $(BUILD)/tests/fuzz/%.o $(BUILD)/tests/fuzz/corpus_driver.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/tests/fuzz/corpus_driver.o $(LIB) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

JOBS ?= $(shell nproc 2>/dev/null || echo 2)

test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@$(MAKE) --no-print-directory $(BUILD)/gen/formats/trace.desc
	@BUILD=$(BUILD) tests/run.sh

# The slow tier: everything of `make test` plus its slow parts and tests/slow/ (minutes).
test-slow: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@$(MAKE) --no-print-directory $(BUILD)/gen/formats/trace.desc
	@BUILD=$(BUILD) ACCELTRACE_SLOW=1 tests/run.sh

# The short tier: the units of tests/check.txt (the contract tests of every floor, under
# a minute), built and run alone.
CHECK_UNITS := $(shell sed -e 's/\#.*//' tests/check.txt 2> /dev/null)
CHECK_BIN := $(addprefix $(BUILD)/tests/,$(filter test_%,$(CHECK_UNITS))) \
        $(patsubst %-corpus,$(BUILD)/fuzz/%,$(filter fuzz_%-corpus,$(CHECK_UNITS)))

check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) check-build
	@BUILD=$(BUILD) tests/run.sh $(CHECK_UNITS)

check-build: $(PROG) $(CHECK_BIN) $(BUILD)/gen/formats/trace.desc
	@:

# One unit of `make test` (tests/run.sh names): `make test-trace` runs build/tests/test_trace,
# `make test-sh-results_merge` tests/sh/results_merge.sh, `make test-fuzz-results` the fuzz
# target fuzz_results over its corpus, `make test-slow-NAME` tests/slow/NAME.sh.
test-sh-%: deps
	@[ -f tests/sh/$*.sh ] || { echo "make: no shell test tests/sh/$*.sh" >&2; exit 2; }
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/gen/formats/trace.desc
	@BUILD=$(BUILD) tests/run.sh $*

test-slow-%: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/gen/formats/trace.desc
	@BUILD=$(BUILD) tests/run.sh slow_$*

test-fuzz-%: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(BUILD)/fuzz/fuzz_$*
	@BUILD=$(BUILD) tests/run.sh fuzz_$*-corpus

test-%: deps
	@[ -f tests/test_$*.c ] || { echo "make: no cmocka program tests/test_$*.c (shell tests: make test-sh-NAME)" >&2; exit 2; }
	@$(MAKE) --no-print-directory -j$(JOBS) $(BUILD)/tests/test_$*
	@BUILD=$(BUILD) tests/run.sh test_$*

demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(PROG)
	$(PROG) demo -o out

# The papers' numbers beside ours at the papers' settings (docs/models.md, under 20 min).
reproduce: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(PROG)
	$(PROG) reproduce all -o out/reproduce

# Benchmarks build in their own folder: make does not track flags, so sharing build/
# would time objects compiled at the test optimisation level.
bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=build-bench OPT="-O3 -march=native" all
	@BUILD=build-bench bench/run.sh

asan: deps
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=build-asan OPT="-O1" \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    EXTRA_LDFLAGS="-fsanitize=address,undefined" all build-asan/gen/formats/trace.desc
	@BUILD=build-asan ASAN=1 tests/run.sh

fuzz: deps
	@BUILD=build-fuzz scripts/fuzz.sh

FORMAT_FILES := $(LIB_SRC) $(CLI_SRC) $(TEST_SRC) $(TEST_HELPER_SRC) \
        $(wildcard $(addsuffix /*.h,$(LIB_DIRS) cli tests/helpers))

format:
	clang-format -i $(FORMAT_FILES)

# The files of `make format` as they are: clang-format (the committed .clang-format) must
# report no change. `make layering` (and so .ci/run) runs it too.
format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

# Floors, include cycles, function/file lengths and the format (scripts/layering.sh;
# docs/architecture.md).
layering: deps
	@scripts/layering.sh --format

clean:
	rm -rf build build-asan build-fuzz build-bench

# `make install PREFIX=DIR` (default /usr/local; DESTDIR for staged installs): the program,
# its man page (scripts/manpage.sh, from the program's own help text), its bash
# completion (`acceltrace completion bash`), the configs and the shipped model weights
# (which an installed program finds under PREFIX/share/acceltrace). `make uninstall`
# with the same PREFIX removes exactly these.
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  := $(DESTDIR)$(PREFIX)/bin
MANDIR  := $(DESTDIR)$(PREFIX)/share/man/man1
COMPDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
DATADIR := $(DESTDIR)$(PREFIX)/share/acceltrace
INSTALL_CONFIGS := $(wildcard configs/*.json)
INSTALL_MODELS  := $(wildcard configs/models/*)

$(BUILD)/acceltrace.1: $(PROG) scripts/manpage.sh
	scripts/manpage.sh $(PROG) > $@.tmp && mv $@.tmp $@

$(BUILD)/acceltrace.bash: $(PROG)
	$(PROG) completion bash > $@.tmp && mv $@.tmp $@

install: $(PROG) $(BUILD)/acceltrace.1 $(BUILD)/acceltrace.bash
	install -d $(BINDIR) $(MANDIR) $(COMPDIR) $(DATADIR)/configs $(DATADIR)/models
	install -m 755 $(PROG) $(BINDIR)/acceltrace
	install -m 644 $(BUILD)/acceltrace.1 $(MANDIR)/acceltrace.1
	install -m 644 $(BUILD)/acceltrace.bash $(COMPDIR)/acceltrace
	install -m 644 $(INSTALL_CONFIGS) $(DATADIR)/configs/
	install -m 644 $(INSTALL_MODELS) $(DATADIR)/models/

uninstall:
	rm -f $(BINDIR)/acceltrace $(MANDIR)/acceltrace.1 $(COMPDIR)/acceltrace
	rm -f $(addprefix $(DATADIR)/configs/,$(notdir $(INSTALL_CONFIGS)))
	rm -f $(addprefix $(DATADIR)/models/,$(notdir $(INSTALL_MODELS)))
	-rmdir $(DATADIR)/configs $(DATADIR)/models $(DATADIR) 2> /dev/null

# Retrains the shipped trained-small DiT (docs/models.md#trained-small-shipped-weights-measured-not-paper-numbers): the photographs
# of configs/models/trained-small.manifest, one thread, fixed seeds; rewrites
# configs/models/trained-small{.safetensors,.safetensors.sha256,.encoder.safetensors}.
.PHONY: train-dit
train-dit:
	@scripts/deps.sh train
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 /usr/bin/python3 scripts/train_dit.py

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
