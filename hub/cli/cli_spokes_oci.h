/* Container images as spokes (cli_spokes_oci.c): `hub spokes add NAME oci:REF`. */
#ifndef HUB_CLI_SPOKES_OCI_H
#define HUB_CLI_SPOKES_OCI_H

#include "runtime/runtime.h"

#include <jansson.h>
#include <stdbool.h>

struct oci_image {
    json_t *command; /* the image's Entrypoint + Cmd, the program absolute inside it */
    char *runtime;   /* c, python or node: the one asked for, else guessed from it */
    char *profile;   /* the nsjail-lite profile written beside the root (rootfs, env, cwd) */
    json_t *image;   /* the manifest's "image": ref, digest, dir (, secret, args) */
};

/* True for "oci:REF". */
bool oci_is_ref(const char *arg);
/* Pulls REF by digest (args, a JSON array of strings, replaces the image's Cmd when not
 * empty) into <data_root>/.spoke-images/APP (skopeo; the registry's
 * credentials, "USER:PASSWORD", from the store's secret registry_secret when not
 * NULL), unpacks it (umoci) into a read-only root the jail's uid can read, refusing
 * device nodes and clearing setuid/setgid bits, and writes its profile. runtime NULL:
 * guessed from the entrypoint. 0, or -1 with err (skopeo's or umoci's output shown). */
int oci_pull(const struct hub_config *cfg, const char *app, const char *ref, const json_t *args,
             const char *registry_secret, const char *runtime, struct oci_image *out, char *err,
             size_t errlen);
/* For verify: "" when the pinned image's tag still names its digest, else a line saying
 * what it names now; NULL with err when the registry cannot say. Pulls nothing. */
char *oci_tag_moved(const struct hub_config *cfg, const char *app, const json_t *image, char *err,
                    size_t errlen);
/* Puts the pulled image into a manifest: command, runtime, profile, image. */
void oci_apply(json_t *root, const struct oci_image *img);
/* "image: REF sha256:A -> sha256:B", or NULL when the digest is the same. */
char *oci_digest_diff(const json_t *was, const json_t *now);
/* Removes an image's root and profile (<store>/<HEX>) and its blobs from the layout. */
void oci_drop(const char *dir);
void oci_image_free(struct oci_image *img);

#endif
