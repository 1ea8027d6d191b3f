# lib/: code that more than one binary links.
LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(call objs,$(LIB_SRCS))

$(LIBISOLATE): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)$(AR) rcs $@ $^
