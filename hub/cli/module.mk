# hub/cli/: the command line (`hub call`, `hub spokes` with add/update/verify, `hub serve`,
# `hub repl-server`, `hub approvals`, `hub client`, `hub schema`, `hub secrets`, and
# main.c, which dispatches to them, to `hub casestudies` and to the assistant), each
# command's option loop through hub/cmdline's cli_next_option(), and the hub binary,
# linked from every hub/ folder's library, the highest first.
CLI_SRCS := $(sort $(filter-out hub/cli/main.c,$(wildcard hub/cli/*.c)))
LIBHUBCLI := $(BUILD)/lib/libhubcli.a
BINARIES += $(BUILD)/hub

$(LIBHUBCLI): $(call objs,$(CLI_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/hub: $(call objs,hub/cli/main.c) $(LIBHUBCLI) $(LIBHUBCASES) $(LIBHUBBENCH) $(LIBHUBASSIST) \
		$(LIBHUBREPL) $(LIBHUBSERVE) $(LIBHUBCMDLINE) $(HUB_LIB) $(LIBHUBAGENT) $(HUB_JAIL_LIB) $(LIBJSONSCHEMA) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUB_LDLIBS)
