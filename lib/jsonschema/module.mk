# lib/jsonschema/: the JSON Schema validator (drafts 04 to 2020-12, bounded, never
# fetching) as a library of its own, which the hub's runtime (manifests, tool arguments
# and results), `hub schema` and the tests link. Interface: jsonschema.h.
JSONSCHEMA_SRCS := $(sort $(wildcard lib/jsonschema/*.c))
LIBJSONSCHEMA := $(BUILD)/lib/libjsonschema.a

$(LIBJSONSCHEMA): $(call objs,$(JSONSCHEMA_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
