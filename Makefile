# IsolateGPT-C top-level build.
#
# Each component describes its own targets in <dir>/module.mk; this file holds the
# flags, the pattern rules and the project-wide targets. Binaries land in build/
# (build/san/ for SAN=1, so sanitizer objects never mix with normal ones).

.DEFAULT_GOAL := all
SHELL := /bin/bash

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec/isolategpt
DATADIR ?= $(PREFIX)/share/isolategpt
DESTDIR ?=

SAN ?= 0
# FUZZ=1: the libFuzzer build in build/fuzz/ (clang, ASan+UBSan, coverage for libFuzzer);
# tests/fuzz/module.mk adds the fuzz targets to it. `make fuzz` and `make check` use it.
FUZZ ?= 0
ifeq ($(FUZZ),1)
BUILD := build/fuzz
CC := clang
OPT := -O1
SAN_FLAGS := -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
else ifeq ($(SAN),1)
BUILD := build/san
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else
BUILD := build
SAN_FLAGS :=
endif

# The libraries the design names, all from Debian packages through pkg-config.
PKGS := libseccomp libnl-3.0 libnl-route-3.0 libevent libcurl hiredis jansson libpsl libpcre2-8 \
	libsystemd
MISSING_PKGS := $(shell for p in $(PKGS); do pkg-config --exists $$p 2>/dev/null || echo $$p; done)
pkg_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pkg_libs = $(shell pkg-config --libs $(1) 2>/dev/null)

OPT ?= -O2
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes \
	-Wmissing-prototypes -Wvla -Wpointer-arith -Wundef
CFLAGS ?=
LDFLAGS ?=
# -Ihub: hub/'s folders include each other as "runtime/runtime.h".
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARNINGS) $(SAN_FLAGS) -I. -Ilib -Ihub \
	-fstack-protector-strong -D_FORTIFY_SOURCE=2 $(call pkg_cflags,$(PKGS)) $(CFLAGS)
ALL_LDFLAGS := $(SAN_FLAGS) -Wl,-z,relro,-z,now $(LDFLAGS)

LIBISOLATE := $(BUILD)/lib/libisolate.a
BINARIES :=
TEST_BINARIES :=

# V=1 shows the full commands.
ifeq ($(V),1)
Q :=
else
Q := @
endif

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# Objects are never intermediate: keep them for incremental builds.
.SECONDARY:

objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# Each component may split its rules over several .mk files in its own directory.
# hub/ is a folder per subsystem, each with its module.mk; they are read lowest layer
# first (runtime, then llm, memory and cmdline, then assistant, repl, serve and casestudies, then
# cli), so that each can name the libraries below it in its rules. hub/*.mk, if any, first.
HUB_LAYERS := secrets config net runtime llm memory cmdline assistant repl serve casestudies agentbench cli
include lib/module.mk lib/jsonschema/module.mk
include $(sort $(wildcard nsjail-lite/*.mk netproxy/*.mk spokes/*.mk hub/*.mk))
include $(foreach d,$(HUB_LAYERS),hub/$(d)/module.mk)
include $(sort $(filter-out $(foreach d,$(HUB_LAYERS),hub/$(d)/module.mk),$(wildcard hub/*/module.mk)))
include tests/module.mk

.PHONY: all deps check tests bench demo clean install uninstall format valgrind fuzz load deb \
	check-host

ifneq ($(strip $(MISSING_PKGS)),)
all:
	@echo "error: missing libraries: $(MISSING_PKGS)" >&2
	@echo "       run 'make deps' (as root it installs them with apt-get)" >&2
	@exit 1
else
all: $(BINARIES)
endif

deps:
	@scripts/deps

# The suite installs what it needs first: CI runs on a clean clone. The fuzz harnesses
# get their own build (clang) for the bounded smoke runs of tests/fuzz/test_fuzz.sh.
check:
	@scripts/deps --browser
	@scripts/deps --fuzz || echo "check: cannot install clang/libFuzzer; the fuzz runs are skipped" >&2
	@$(MAKE) --no-print-directory all tests
	@if tests/fuzz/have-libfuzzer 2>/dev/null; then $(MAKE) --no-print-directory FUZZ=1 fuzzers; fi
	@BUILD=$(BUILD) tests/run $(T)

tests: $(TEST_BINARIES)

bench:
	@scripts/deps --bench
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) scripts/bench/run $(B)

# Load runs with figures (scripts/load/): netproxy holding its descriptor limit's worth of
# tunnels and a 50,000-CONNECT burst with the audit log checked, the hub with 100
# spokes, the repl-server with 64 sessions. L=NAME picks one.
load:
	@scripts/deps
	@$(MAKE) --no-print-directory all tests
	@BUILD=$(BUILD) scripts/load/run $(L)

demo:
	@scripts/deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) scripts/demo

# The suite's hub, netproxy and nsjail-lite paths under memcheck (tests/valgrind/run says
# what valgrind 3.19 cannot run and what covers it instead). T=FILTER picks tests.
valgrind:
	@scripts/deps --valgrind
	@$(MAKE) --no-print-directory all tests
	@tests/valgrind/run $(T)

# libFuzzer: every harness in tests/fuzz/ for FUZZ_SECONDS each (F=NAME picks some),
# one after another, over its committed seeds; findings land in build/fuzz/findings/.
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/deps --fuzz
	@$(MAKE) --no-print-directory FUZZ=1 fuzzers
	@tests/fuzz/run --seconds $(FUZZ_SECONDS) $(F)

clean:
	rm -rf build

# The Debian package (debian/, debhelper), built from a clean copy of the tree:
# $(BUILD)/isolategpt_VERSION_amd64.deb, with no lintian error (scripts/deb).
deb:
	@scripts/deps --host
	@scripts/deb $(BUILD)

# The host test (tests/host/run): a Debian 12 machine with systemd and cgroup v2, booted
# with QEMU under TCG, runs make demo, the cgroup, escape and namespace suites, many jail
# starts and the package with its units. HOST_STARTS=N for fewer starts.
check-host:
	@scripts/deps --host
	@$(MAKE) --no-print-directory all tests
	@$(MAKE) --no-print-directory deb
	@BUILD=$(BUILD) tests/host/run

# A standard system layout under DESTDIR (scripts/install says what goes where):
# configuration in /etc/isolategpt (never overwriting an edited file), units, tmpfiles,
# logrotate. uninstall leaves the configuration, data and logs.
install: all
	@BUILD=$(BUILD) DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) BINDIR=$(BINDIR) \
		LIBEXECDIR=$(LIBEXECDIR) DATADIR=$(DATADIR) scripts/install install

uninstall:
	@DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) BINDIR=$(BINDIR) LIBEXECDIR=$(LIBEXECDIR) \
		DATADIR=$(DATADIR) scripts/install uninstall

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
