# hub/: the trusted core (runtime) and its command line. Files named llm*, replay*,
# memory*, grants* belong to the agent (hub/agent.mk, its own library); every other
# hub/*.c but main.c goes into the runtime's library, which the tests link too.
HUB_SRCS := $(filter-out hub/main.c hub/llm% hub/replay% hub/memory% hub/grants%,$(wildcard hub/*.c))
HUB_OBJS := $(call objs,$(HUB_SRCS))
HUB_LIB := $(BUILD)/lib/libhub.a
BINARIES += $(BUILD)/hub

# nsjail-lite as a library for the process and namespace modes: its sources without
# its command line. Until it exists those modes report that this build lacks it.
HUB_JAIL_SRCS := $(filter-out nsjail-lite/main.c,$(wildcard nsjail-lite/*.c))
ifneq ($(strip $(HUB_JAIL_SRCS)),)
$(call objs,hub/proc.c): ALL_CFLAGS += -DHUB_HAVE_JAIL
HUB_JAIL_OBJS := $(call objs,$(HUB_JAIL_SRCS))
else
HUB_JAIL_OBJS :=
endif

$(HUB_LIB): $(HUB_OBJS) $(HUB_JAIL_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/hub: $(call objs,hub/main.c) $(HUB_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(PKGS))
