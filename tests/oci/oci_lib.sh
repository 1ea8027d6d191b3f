# Helpers for tests/oci; source after tests/lib.sh and tests/hub/hub_lib.sh (MODE set).
#
# oci_registry: Debian's docker-registry on a free loopback port, with an htpasswd
# login (user tester, PASSWORD, bcrypt from python3's crypt), its data, config and log
# under $TMP/registry; sets PORT, PASSWORD, REGISTRY (127.0.0.1:PORT). Killed at exit.
# oci_push LAYOUT:TAG REPO:TAG: pushes an image of the test's OCI layout there.
oci_tools_or_skip() {
    local tool
    for tool in skopeo umoci docker-registry; do
        if ! command -v "$tool" >/dev/null; then
            skip "$TEST_NAME" "$tool is missing (scripts/deps)"
            exit 0
        fi
    done
}

oci_registry() {
    local reg=$TMP/registry
    PASSWORD="itest-Reg-$$-pw"
    mkdir -p "$reg/data"
    PORT=$(free_port)
    REGISTRY=127.0.0.1:$PORT
    /usr/bin/python3 -W ignore -c 'import crypt, sys
print("tester:" + crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
        "$PASSWORD" >"$reg/htpasswd"
    cat >"$reg/config.yml" <<EOC
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $reg/data
http:
  addr: 127.0.0.1:$PORT
  secret: itest-$$
auth:
  htpasswd:
    realm: itest
    path: $reg/htpasswd
EOC
    bg docker-registry serve "$reg/config.yml" >"$reg/log" 2>&1
    wait_for "the registry" 30 _oci_registry_up
}
_oci_registry_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$REGISTRY/v2/")" = 401 ]; }

oci_push() {
    skopeo copy --quiet --dest-tls-verify=false --dest-creds "tester:$PASSWORD" \
        "oci:$1" "docker://$REGISTRY/$2"
}
