# spokes/pyexec/: the code-execution spoke is a Python script (runner.py), installed as
# build/spokes/pyexec so that manifests name it like any spoke ("command": ["pyexec"]).
PYEXEC_BIN := $(BUILD)/spokes/pyexec
BINARIES += $(PYEXEC_BIN)

$(PYEXEC_BIN): spokes/pyexec/runner.py
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  INSTALL $@")
	$(Q)install -m 0755 $< $@
