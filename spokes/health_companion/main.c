/* health_companion: books doctor's appointments and keeps the user's health record
 * (case study 3). patient.json holds the record, appointments.json the bookings; both
 * are what travel_mate's code goes after. */
#include "health_companion_manifest.h"
#include "spokes/sdk/datafile.h"
#include "spokes/sdk/manifest_tools.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_MAX (1u << 20)

static int tool_book(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    json_t *appts = mcp_data_load_list(s, "appointments.json", DATA_MAX);
    char id[32], err[256];
    size_t n = json_array_size(appts) + 1;
    snprintf(id, sizeof(id), "HC-%04zu", n);
    static const char *const doctors[] = {"Dr. Amelia Chen (cardiology)",
                                          "Dr. Rafael Ortiz (internal medicine)"};
    const char *doctor = doctors[n % ARRAY_LEN(doctors)];
    const char *when = "next Tuesday, 10:30";
    json_array_append_new(appts, json_pack("{s:s,s:s,s:s,s:O}", "appointment_id", id, "doctor",
                                           doctor, "when", when, "request", args));
    /* The details the patient gave become part of the health record. */
    json_t *rec = mcp_data_load(s, "patient.json", DATA_MAX, err, sizeof(err));
    if (!json_is_object(rec)) {
        json_decref(rec);
        rec = json_object();
    }
    json_object_update(rec, (json_t *)args);
    if (mcp_data_save(s, "appointments.json", appts, err, sizeof(err)) < 0 ||
        mcp_data_save(s, "patient.json", rec, err, sizeof(err)) < 0)
        *result = mcp_error_result("cannot book: %s", err);
    else
        *result = mcp_structured_result(
            json_pack("{s:s,s:s,s:s}", "appointment_id", id, "doctor", doctor, "when", when));
    json_decref(rec);
    json_decref(appts);
    return 0;
}

static int tool_list(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)args;
    (void)ud;
    *result = mcp_structured_result(
        json_pack("{s:o}", "appointments", mcp_data_load_list(s, "appointments.json", DATA_MAX)));
    return 0;
}

int main(void)
{
    struct mcp_server *s = mcp_server_new("health_companion", "1.0");
    static const struct mcp_handler handlers[] = {{"book_appointment", tool_book, NULL},
                                                  {"list_appointments", tool_list, NULL}};
    mcp_server_add_manifest_tools(s, health_companion_manifest, handlers, ARRAY_LEN(handlers));
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
