# spokes/: the SDK (spokes/sdk/, a library) and one binary per directory
# spokes/<name>/*.c -> build/spokes/<name>. A spoke links the SDK, lib/ and jansson;
# SPOKE_LIBS_<name> adds more (fetch: libcurl), SPOKE_EXTRA_<name> more of our own
# libraries (spokes/cases.mk: the attack code of the case studies' malicious apps).
SPOKE_SDK_SRCS := $(wildcard spokes/sdk/*.c)
SPOKE_SDK := $(BUILD)/lib/libspokesdk.a
SPOKE_NAMES := $(sort $(filter-out sdk attack,$(notdir $(patsubst %/,%,$(dir $(wildcard spokes/*/*.c))))))
SPOKE_BINS := $(addprefix $(BUILD)/spokes/,$(SPOKE_NAMES))
BINARIES += $(SPOKE_BINS)

SPOKE_LIBS_fetch := libcurl
SPOKE_LIBS_mcp_remote := libcurl

$(SPOKE_SDK): $(call objs,$(SPOKE_SDK_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

define SPOKE_RULE
$(BUILD)/spokes/$(1): $(call objs,$(wildcard spokes/$(1)/*.c)) $(SPOKE_EXTRA_$(1)) $(SPOKE_SDK) $(LIBISOLATE)
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$(call pkg_libs,jansson $(SPOKE_LIBS_$(1)))
endef
$(foreach s,$(SPOKE_NAMES),$(eval $(call SPOKE_RULE,$(s))))
