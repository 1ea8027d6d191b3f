# tests/fuzz: libFuzzer harnesses, one per parser of hostile input (see the comment at
# the top of each fuzz_*.c). Built only in the FUZZ=1 build (clang, build/fuzz/), by
# `make fuzzers`; `make fuzz` runs each for FUZZ_SECONDS, and `make check` runs each
# for a bounded number of executions (tests/fuzz/test_fuzz.sh).
FUZZ_NAMES := connect host jsonrpc manifest pin profile schema replay replframe dns sniff auditline
FUZZERS := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_COMMON := $(call objs,tests/fuzz/fuzz_file.c)
# The sources each harness needs besides lib/ (only these are compiled in the fuzz build,
# which keeps `make check` short; a new dependency shows up as a link error here).
FUZZ_SRCS_connect := netproxy/core/connect.c netproxy/core/host.c netproxy/core/policy.c
FUZZ_SRCS_host := netproxy/core/host.c netproxy/core/policy.c netproxy/core/connect.c
FUZZ_SRCS_dns := netproxy/egress/dnsmsg.c
FUZZ_SRCS_sniff := netproxy/core/sniff.c netproxy/core/connect.c
FUZZ_SRCS_jsonrpc :=
FUZZ_SRCS_manifest := hub/config/manifest.c hub/secrets/keylike.c hub/secrets/secrets_store.c \
	hub/secrets/secretscan.c \
	hub/runtime/spoke_env.c \
	$(wildcard lib/jsonschema/*.c)
FUZZ_SRCS_pin := hub/config/pin.c
FUZZ_SRCS_auditline := hub/secrets/secretscan.c hub/secrets/keylike.c
FUZZ_SRCS_profile := nsjail-lite/profile.c nsjail-lite/seccomp.c nsjail-lite/channel.c
FUZZ_OBJS_profile := $(NSJAIL_BUILTIN_O)
FUZZ_SRCS_schema := $(wildcard lib/jsonschema/*.c)
FUZZ_SRCS_replay := $(wildcard hub/llm/*.c)
FUZZ_SRCS_replframe := hub/repl/replframe.c

.PHONY: fuzzers
ifeq ($(FUZZ),1)
fuzzers: $(FUZZERS)

define FUZZ_RULE
$(BUILD)/fuzz/fuzz_$(1): $(call objs,tests/fuzz/fuzz_$(1).c $(FUZZ_SRCS_$(1))) $(FUZZ_COMMON) \
		$(FUZZ_OBJS_$(1)) $(LIBISOLATE)
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -fsanitize=fuzzer -o $$@ $$^ \
		$$(call pkg_libs,$$(PKGS) libidn2 libcrypto) -lpthread
endef
$(foreach f,$(FUZZ_NAMES),$(eval $(call FUZZ_RULE,$(f))))
else
# The fuzzers have their own build (clang, coverage instrumentation).
fuzzers:
	@$(MAKE) --no-print-directory FUZZ=1 fuzzers
endif
