# hub/: the trusted core (runtime) and its command line. The agent's files (llm*,
# replay*, memory*, grants*, and the assistant's agent*, planner*, perms*, term*,
# lineedit*) are built by hub/agent.mk into their own libraries, hub casestudies*
# by hub/casestudies.mk; every other hub/*.c but main.c goes into the runtime's
# library, which the tests link too.
HUB_SRCS := $(filter-out hub/main.c $(AGENT_SRCS) $(ASSIST_SRCS) $(CASES_SRCS),$(wildcard hub/*.c))
HUB_OBJS := $(call objs,$(HUB_SRCS))
HUB_LIB := $(BUILD)/lib/libhub.a
BINARIES += $(BUILD)/hub

# nsjail-lite as a library for the process and namespace modes: its module.mk (read
# after this one) builds it at this fixed path. Without it those modes say that this
# build lacks nsjail-lite.
ifneq ($(wildcard nsjail-lite/jail.c),)
$(call objs,hub/proc.c): ALL_CFLAGS += -DHUB_HAVE_JAIL
HUB_JAIL_LIB := $(BUILD)/lib/libnsjail-lite.a
HUB_LDLIBS := $(call pkg_libs,$(PKGS)) -lpthread
else
HUB_JAIL_LIB :=
HUB_LDLIBS := $(call pkg_libs,$(PKGS))
endif

$(HUB_LIB): $(HUB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/hub: $(call objs,hub/main.c) $(LIBHUBCASES) $(LIBHUBASSIST) $(HUB_LIB) $(LIBHUBAGENT) \
		$(HUB_JAIL_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUB_LDLIBS)
