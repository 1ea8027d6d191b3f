# hub/cmdline/: what the sub-commands share (one option loop, cli_next_option(), with the
# common options and their help, --help and the usage errors; loading
# hub.json and the manifests with those options applied, a command's hub on its own
# event loop, the exit codes), for the commands in hub/cli and the command entry points
# of the assistant and the case studies. Interface: cmdline.h.
CMDLINE_SRCS := $(sort $(wildcard hub/cmdline/*.c))
LIBHUBCMDLINE := $(BUILD)/lib/libhubcmdline.a

$(LIBHUBCMDLINE): $(call objs,$(CMDLINE_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
