/* metro_hail: a ride-hailing app (case study 1, the victim). Fares come from its fare
 * table (fares.json in its data directory, loaded once at start, as a real service
 * loads its price list) and the distance between two places of its city map
 * (places.json). Bookings are kept in rides.json. */
#include "metro_hail_manifest.h"
#include "spokes/sdk/datafile.h"
#include "spokes/sdk/manifest_tools.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_MAX 65536

/* The fare table in memory. The magic marks it for humans reading a core dump (and,
 * in the case study, for the attacker who goes looking for it in this process). */
static struct rates {
    char magic[16];
    double base, per_mile, per_minute, booking_fee;
} rates = {"METROHAIL-RATES", 0, 0, 0, 0};

static bool rates_loaded;
static char rates_error[256];

static void load_rates(struct mcp_server *s)
{
    json_t *f = mcp_data_load(s, "fares.json", DATA_MAX, rates_error, sizeof(rates_error));
    if (!f)
        return;
    rates.base = json_number_value(json_object_get(f, "base"));
    rates.per_mile = json_number_value(json_object_get(f, "per_mile"));
    rates.per_minute = json_number_value(json_object_get(f, "per_minute"));
    rates.booking_fee = json_number_value(json_object_get(f, "booking_fee"));
    rates_loaded = true;
    json_decref(f);
}

/* Distance on the city grid (blocks, in miles) between two places of places.json. */
static bool trip(struct mcp_server *s, const char *from, const char *to, double *miles,
                 double *minutes, char *err, size_t errlen)
{
    json_t *map = mcp_data_load(s, "places.json", DATA_MAX, err, errlen);
    if (!map)
        return false;
    json_t *a = json_object_get(map, from), *b = json_object_get(map, to);
    if (!json_is_array(a) || !json_is_array(b)) {
        snprintf(err, errlen, "unknown place \"%s\"", json_is_array(a) ? to : from);
        json_decref(map);
        return false;
    }
    double dx = json_number_value(json_array_get(a, 0)) - json_number_value(json_array_get(b, 0));
    double dy = json_number_value(json_array_get(a, 1)) - json_number_value(json_array_get(b, 1));
    *miles = mcp_abs(dx) + mcp_abs(dy);
    *minutes = (double)(long long)(*miles / 18.0 * 60.0 + 3.5);
    json_decref(map);
    return true;
}

static double fare_of(double miles, double minutes)
{
    double f = rates.base + rates.per_mile * miles + rates.per_minute * minutes + rates.booking_fee;
    return mcp_round_cents(f);
}

static int tool_estimate(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    const char *from = json_string_value(json_object_get(args, "from"));
    const char *to = json_string_value(json_object_get(args, "to"));
    char err[256];
    double miles, minutes;
    if (!rates_loaded)
        *result = mcp_error_result("no fare table: %s", rates_error);
    else if (!trip(s, from, to, &miles, &minutes, err, sizeof(err)))
        *result = mcp_error_result("%s", err);
    else
        *result = mcp_structured_result(
            json_pack("{s:s,s:s,s:s,s:f,s:f,s:f}", "service", "MetroHail", "from", from, "to", to,
                      "distance_miles", mcp_round_cents(miles), "duration_min", minutes, "fare_usd",
                      fare_of(miles, minutes)));
    return 0;
}

static int tool_book(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    const char *from = json_string_value(json_object_get(args, "from"));
    const char *to = json_string_value(json_object_get(args, "to"));
    char err[256];
    double miles, minutes;
    if (!rates_loaded || !trip(s, from, to, &miles, &minutes, err, sizeof(err))) {
        *result = mcp_error_result("cannot book: %s", rates_loaded ? err : rates_error);
        return 0;
    }
    double fare = fare_of(miles, minutes);
    *result = mcp_data_book(s, "rides.json", DATA_MAX, "MH",
                            json_pack("{s:O,s:f}", "ride", args, "fare_usd", fare),
                            json_pack("{s:f}", "fare_usd", fare));
    return 0;
}

int main(void)
{
    struct mcp_server *s = mcp_server_new("metro_hail", "1.0");
    load_rates(s);
    static const struct mcp_handler handlers[] = {{"estimate_fare", tool_estimate, NULL},
                                                  {"book_ride", tool_book, NULL}};
    mcp_server_add_manifest_tools(s, metro_hail_manifest, handlers, ARRAY_LEN(handlers));
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
