# spokes/cases.mk: build support for the case-study apps (issue 6), read before
# spokes/module.mk, which builds every spokes/<name>/ as a binary.
#
# - spokes/attack/ is the compromised apps' attack code: a library linked only into
#   quick_ride, mail, travel_mate and creative_muse (SPOKE_EXTRA_<name>), never into
#   the SDK or a legitimate app.
# - Each case-study app embeds its manifest (config/spokes/<app>.json) as a C string
#   generated here, and registers its tools from it (spokes/sdk/manifest_tools.h): the
#   app and its manifest cannot disagree.
CASE_APPS := metro_hail quick_ride mail drive health_companion travel_mate creative_muse \
	symptom_solver
CASE_MALICIOUS_APPS := quick_ride mail travel_mate creative_muse

SPOKE_ATTACK := $(BUILD)/lib/libspokeattack.a
$(SPOKE_ATTACK): $(call objs,$(wildcard spokes/attack/*.c))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(foreach a,$(CASE_MALICIOUS_APPS),$(eval SPOKE_EXTRA_$(a) := $(SPOKE_ATTACK)))

# JSON -> one C string literal per line.
define CASE_APP_RULE
$(BUILD)/gen/spokes/$(1)_manifest.h: config/spokes/$(1).json spokes/cases.mk
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  GEN     $$@")
	$$(Q){ echo '/* Generated from config/spokes/$(1).json by spokes/cases.mk. */'; \
	  echo 'static const char $(1)_manifest[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$$$/\\n"/' $$<; \
	  echo '    ;'; } >$$@.tmp && mv $$@.tmp $$@
$(call objs,$(wildcard spokes/$(1)/*.c)): $(BUILD)/gen/spokes/$(1)_manifest.h
$(call objs,$(wildcard spokes/$(1)/*.c)): ALL_CFLAGS += -I$(BUILD)/gen/spokes
endef
$(foreach a,$(CASE_APPS),$(eval $(call CASE_APP_RULE,$(a))))
