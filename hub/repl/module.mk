# hub/repl/: the repl-server (sandboxed Python sessions over TCP: the server, its
# sessions, the frame format) as a library of its own. Interface: repl.h.
REPL_SRCS := $(sort $(wildcard hub/repl/*.c))
LIBHUBREPL := $(BUILD)/lib/libhubrepl.a

$(LIBHUBREPL): $(call objs,$(REPL_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
